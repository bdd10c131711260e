"""What /proc says about a peer's process: its CPU time, its resident memory."""

from __future__ import annotations

import os
from collections.abc import Iterator

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_times(pid: int) -> tuple[float, float]:
    """(utime, stime) of ``pid`` (all its threads), in seconds: user space, and the
    kernel working for it (its syscalls, and on loopback the peer's TCP receive too)."""
    with open(f"/proc/{pid}/stat") as fh:
        text = fh.read()
    # The command name (field 2) may contain spaces: split after its closing paren.
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]) / _CLK_TCK, int(fields[12]) / _CLK_TCK


def _thread_files(pid: int, name: str) -> Iterator[str]:
    """The text of ``/proc/PID/task/TID/<name>`` for each live thread of ``pid``. A
    thread that exits between the listing and the read is passed over, so a sum over
    them is the live threads' (a proxy's threads live as long as it does)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/{name}") as fh:
                text = fh.read()
        except FileNotFoundError:
            continue
        yield text


def context_switches(pid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of ``pid``, summed over its threads.

    A voluntary switch is a thread going to sleep, on a proxy mostly in epoll_wait: each
    is a wakeup to come, and with it caches that other processes used meanwhile. An
    involuntary one is a thread preempted while it had work."""
    voluntary = involuntary = 0
    for status in _thread_files(pid, "status"):
        for line in status.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                voluntary += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                involuntary += int(line.split()[1])
    return voluntary, involuntary


#: Whether this kernel keeps scheduler statistics per task (CONFIG_SCHED_INFO).
HAS_SCHEDSTAT = os.path.exists("/proc/self/schedstat")


def run_queue_wait(pid: int) -> float | None:
    """Seconds the threads of ``pid`` have spent runnable but waiting for a CPU (the
    second field of each thread's ``/proc/PID/task/TID/schedstat``, in nanoseconds),
    summed over its live threads; None on a kernel that keeps no such figure (a gap in
    the tables, never a zero).

    A wakeup's round trip is its CPU time plus this wait: on a host whose cores the
    client and the broker share with the proxy, a proxy woken while both are busy waits
    its turn, and the client waits with it."""
    if not HAS_SCHEDSTAT:
        return None
    waited_ns = sum(int(text.split()[1]) for text in _thread_files(pid, "schedstat"))
    return waited_ns / 1e9


class CpuSince:
    """``pid``'s CPU time, context switches and run-queue wait from now on: made before
    a run, read once it has ended."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.user0, self.system0 = cpu_times(pid)
        self.voluntary0, self.involuntary0 = context_switches(pid)
        self.waited0 = run_queue_wait(pid)

    def spent(self) -> tuple[float, float]:
        """(user, system) seconds ``pid`` has spent since this was made."""
        user, system = cpu_times(self.pid)
        return user - self.user0, system - self.system0

    def switches(self) -> tuple[int, int]:
        """(voluntary, involuntary) context switches of ``pid`` since this was made."""
        voluntary, involuntary = context_switches(self.pid)
        return voluntary - self.voluntary0, involuntary - self.involuntary0

    def waited(self) -> float | None:
        """Seconds ``pid``'s threads have waited runnable for a CPU since this was made
        (None without scheduler statistics)."""
        now = run_queue_wait(self.pid)
        return None if now is None or self.waited0 is None else now - self.waited0


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads), in seconds."""
    return sum(cpu_times(pid))


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of ``pid`` in kB."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0])
    return out


def reset_peak_rss(pid: int) -> bool:
    """Reset ``pid``'s VmHWM to its current RSS (``echo 5 > /proc/PID/clear_refs``), so that
    the peak read after a run is the peak of that run. False if the kernel refused."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def maps_mention(pid: int, needle: str) -> bool:
    with open(f"/proc/{pid}/maps") as fh:
        return any(needle in line for line in fh)
