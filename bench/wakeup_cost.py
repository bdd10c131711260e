"""What one wakeup costs on this machine, across cores and within one.

Every proxied round trip adds two wakeups to a direct one: the proxy woken by the
request, and again by the response. On a virtual machine the cost of a wakeup depends
on where the woken process runs. Woken on a core that is idle, it waits for that core
to come out of its halt, and a guest's halted vCPU is woken by the hypervisor. This
costs 20-40 us here, by the host (a Firecracker guest whose idle cores halt without
polling first: `haltpoll.guest_halt_poll_ns=0`), against 3-5 us for a wakeup on the
waker's own core, and each side of such a ping-pong is charged 14-16 us of system time
a round trip instead of 2-3. None of it shows as run-queue wait (`/proc/PID/schedstat`
counts from the enqueue, which happens once the core is up). So a record made on another
host, or another day, reads differently for reasons no proxy controls, and each run
records the figure beside the host's steal.

The probe is a ping-pong over two pipes between this process and a forked child, each
pinned to a core: a round trip is two wakeups, the figure is half of one.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import TypedDict

HALT_POLL = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")


class WakeupCost(TypedDict):
    """Microseconds a wakeup, median of the repeats; None where it cannot be measured
    (one core only, or pinning refused). `halt_poll_ns`: how long an idle vCPU of a
    KVM guest polls before it halts (None: no such setting, not a guest's haltpoll)."""

    across_cores_us: float | None
    same_core_us: float | None
    halt_poll_ns: int | None


def ping_pong(
    parent_core: int, child_core: int, round_trips: int, partner_busy_s: float = 0.0
) -> float:
    """Seconds a round trip: this process writes a byte, a child pinned to `child_core`
    reads it (after `partner_busy_s` of spinning, which a test uses to check the clock)
    and writes one back. This process is pinned to `parent_core` meanwhile, and
    restored after."""
    before = os.sched_getaffinity(0)
    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer each byte, then leave without Python's cleanup
        status = 1
        try:
            os.close(to_child_w)
            os.close(to_parent_r)
            os.sched_setaffinity(0, {child_core})
            while os.read(to_child_r, 1):  # b"": the parent is done
                if partner_busy_s:
                    until = time.perf_counter() + partner_busy_s
                    while time.perf_counter() < until:
                        pass
                os.write(to_parent_w, b"x")
            status = 0
        finally:
            os._exit(status)
    # Each side holds only its own ends, so that either one leaving ends the other's read.
    os.close(to_child_r)
    os.close(to_parent_w)
    try:
        os.sched_setaffinity(0, {parent_core})
        # One exchange first: the child is then pinned and running its loop.
        _exchange(to_child_w, to_parent_r)
        start = time.perf_counter()
        for _ in range(round_trips):
            _exchange(to_child_w, to_parent_r)
        elapsed = time.perf_counter() - start
    finally:
        os.close(to_child_w)
        os.close(to_parent_r)
        os.waitpid(pid, 0)
        os.sched_setaffinity(0, before)
    return elapsed / round_trips


def _exchange(to_child: int, from_child: int) -> None:
    """One byte there and back. A child that has left (one that could not be pinned to
    its core, say) gives OSError: a broken pipe, or no answer."""
    os.write(to_child, b"x")
    if not os.read(from_child, 1):
        raise OSError("the probe's child left before it answered")


def halt_poll_ns(setting: Path = HALT_POLL) -> int | None:
    """The guest's halt polling in ns; None where the kernel has no such setting."""
    try:
        return int(setting.read_text().strip())
    except (OSError, ValueError):
        return None


def wakeup_cost(round_trips: int = 2000, repeats: int = 3) -> WakeupCost:
    """The probe on the first two cores this process may run on (about 0.3 s here)."""
    cores = sorted(os.sched_getaffinity(0))

    def per_wakeup(child_core: int) -> float | None:
        try:
            runs = [ping_pong(cores[0], child_core, round_trips) for _ in range(repeats)]
        except OSError:
            return None
        return round(statistics.median(runs) / 2 * 1e6, 1)

    return {
        "across_cores_us": per_wakeup(cores[1]) if len(cores) > 1 else None,
        "same_core_us": per_wakeup(cores[0]),
        "halt_poll_ns": halt_poll_ns(),
    }


def cost_words(cost: WakeupCost | None) -> str:
    """One probe's two figures, "20.1 / 3.0 us" ("-" for a figure not measured)."""
    if cost is None:
        return "-"

    def us(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    return f"{us(cost['across_cores_us'])} / {us(cost['same_core_us'])} us"


def wakeup_words(start: WakeupCost | None, end: WakeupCost | None) -> str:
    """A run's probes as the results page and the A/B print them."""
    if start is None and end is None:
        return "-"
    poll = next((c["halt_poll_ns"] for c in (start, end) if c is not None), None)
    polling = "" if poll is None else f" (an idle vCPU polls {poll} ns before it halts)"
    return f"{cost_words(start)} at start, {cost_words(end)} at end{polling}"


def main() -> None:
    """`python -m bench.wakeup_cost`: this host's figures, as an operator checks a host
    before sizing kproxy on it (docs/operations.md, "Sizing")."""
    cost = wakeup_cost()
    poll = cost["halt_poll_ns"]
    print(f"a wakeup across cores / within one: {cost_words(cost)}")
    print("an idle vCPU's halt polling: " + ("-" if poll is None else f"{poll} ns"))


if __name__ == "__main__":
    main()
