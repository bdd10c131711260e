"""Wakeups beside a proxy's CPU: its voluntary context switches over a run, every
thread's, and the time its threads waited runnable for a core, from /proc, and the
A/B's table of them per message, CPU and run-queue wait per wakeup."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from bench import procfs, report
from bench.ab_tables import run_queue_lines, wakeup_lines
from bench.procfs import CpuSince, context_switches, run_queue_wait
from bench.proxy_meter import BrokerMeter, ProxyMeter


class _Process:
    """What ProxyMeter reads of a proxy peer: its pid."""

    def __init__(self, pid: int) -> None:
        self.pid = pid


class _Sleeper:
    """A thread that sleeps on a pipe until woken with a byte, `times` times, then once
    more until `stop`: every sleep is a voluntary switch of that thread, counted in
    /proc while it lives (a thread that has exited leaves the sum)."""

    def __init__(self) -> None:
        self._wake_r, self._wake_w = os.pipe()
        self._woke_r, self._woke_w = os.pipe()
        self._thread = threading.Thread(target=self._sleep)
        self._thread.start()

    def _sleep(self) -> None:
        while True:
            select.select([self._wake_r], [], [])  # blocks: the thread sleeps
            if os.read(self._wake_r, 1) == b"q":
                return
            os.write(self._woke_w, b"x")

    def wake(self, times: int) -> None:
        for _ in range(times):
            os.write(self._wake_w, b"x")
            os.read(self._woke_r, 1)  # this thread sleeps until the sleeper has woken

    def stop(self) -> None:
        os.write(self._wake_w, b"q")
        self._thread.join(timeout=30)
        assert not self._thread.is_alive()
        for fd in (self._wake_r, self._wake_w, self._woke_r, self._woke_w):
            os.close(fd)


def test_a_process_s_wakeups_are_its_threads_voluntary_switches() -> None:
    since = CpuSince(os.getpid())
    sleeper = _Sleeper()
    try:
        sleeper.wake(200)
        voluntary, involuntary = since.switches()
        total_voluntary, _ = context_switches(os.getpid())
    finally:
        sleeper.stop()
    # The sleeper's 200 sleeps, and this thread's waits for it (most of them: a byte
    # may already be there when it reads).
    assert voluntary >= 200
    assert involuntary >= 0
    assert total_voluntary >= voluntary


def test_a_thread_that_shares_its_core_with_busy_processes_waits_on_the_run_queue() -> None:
    """This thread and two spinning children pinned to one core: each runs a third of
    the time and waits the rest, so this process's run-queue wait grows about twice as
    fast as its CPU time (the CPU time itself, read by mistake, would grow as fast).
    The clock starts only once both children say they spin on that core: a child still
    starting its interpreter elsewhere takes no share of it."""
    core = min(os.sched_getaffinity(0))
    affinity = os.sched_getaffinity(0)
    spin = (
        f"import os, sys\nos.sched_setaffinity(0, {{{core}}})\n"
        "sys.stdout.write('spinning\\n')\nsys.stdout.flush()\nwhile True: pass"
    )
    spinners = [
        subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE) for _ in range(2)
    ]
    try:
        for spinner in spinners:
            assert spinner.stdout is not None
            ready, _, _ = select.select([spinner.stdout], [], [], 60)
            assert ready and spinner.stdout.readline() == b"spinning\n"
        os.sched_setaffinity(0, {core})
        since = CpuSince(os.getpid())
        started = time.monotonic()
        while time.monotonic() - started < 0.6:  # runnable all along: any wait is the queue's
            pass
        user, system = since.spent()
        waited = since.waited()
        assert waited is not None and since.waited0 is not None
        now = run_queue_wait(os.getpid())
        assert now is not None and now >= since.waited0 + waited
    finally:
        os.sched_setaffinity(0, affinity)
        for spinner in spinners:
            spinner.kill()
            spinner.wait(timeout=30)
            if spinner.stdout is not None:
                spinner.stdout.close()
    assert waited > 1.3 * (user + system), (waited, user, system)


def test_a_kernel_without_scheduler_statistics_gives_no_wait_not_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(procfs, "HAS_SCHEDSTAT", False)
    assert run_queue_wait(os.getpid()) is None
    assert CpuSince(os.getpid()).waited() is None
    assert BrokerMeter(os.getpid()).record(1000)["run_queue_seconds"] is None  # type: ignore[index]


def test_the_meter_records_wakeups_and_preemptions_of_the_run() -> None:
    sleeper = _Sleeper()
    try:
        meter = ProxyMeter(_Process(os.getpid()))
        sleeper.wake(50)
        proxy, kproxy = meter.records(1e6)
    finally:
        sleeper.stop()
    assert kproxy is None  # not a kproxy peer
    assert proxy is not None
    assert proxy["wakeups"] >= 50
    assert proxy["preemptions"] >= 0
    assert proxy["run_queue_seconds"] >= 0


def _run(path: str, r: int, wakeups: int | None, cpu: float) -> dict[str, Any]:
    record: dict[str, Any] = {"round": r, "path": path, "ok": True,
                              "result": {"msg_per_s": 100.0, "messages": 1000}}  # fmt: skip
    if path != "direct":
        record["proxy"] = {"cpu_seconds": cpu, "cpu_user_seconds": cpu / 5}
        if wakeups is not None:
            record["proxy"].update(wakeups=wakeups, preemptions=wakeups // 100,
                                   run_queue_seconds=cpu / 2)  # fmt: skip
    return record


def _results(runs: list[dict[str, Any]]) -> dict[str, Any]:
    metric = {"key": "msg_per_s", "label": "msg/s", "unit": "msg/s", "higher_is_better": True}
    return {
        "meta": {"rounds": 2},
        "paths": {"direct": {}, "haproxy": {}, "kproxy-uvloop": {}},
        "workloads": {"w": {"kind": "consume", "metrics": [metric], "runs": runs}},
    }


def test_the_table_gives_wakeups_per_message_and_cpu_per_wakeup() -> None:
    runs = [
        _run("direct", 0, None, 0.0),
        _run("haproxy", 0, 2000, 0.010),  # 2 wakeups a message, 5 us each
        _run("kproxy-uvloop", 0, 2000, 0.030),  # as many wakeups, 15 us each
        _run("direct", 1, None, 0.0),
        _run("haproxy", 1, 3000, 0.012),
        _run("kproxy-uvloop", 1, 2000, 0.040),
    ]
    header, haproxy, kproxy = (
        [c.strip() for c in line.split("  ") if c.strip()]
        for line in wakeup_lines(_results(runs), "w")
    )
    assert header == ["path", "wakeups/message", "preemptions/message", "CPU us/wakeup",
                      "user us/wakeup", "run-queue us/wakeup"]  # fmt: skip
    assert haproxy == ["haproxy", "2.500 [2.000-3.000]", "0.025 [0.020-0.030]",
                       "4.5 [4.0-5.0]", "0.9 [0.8-1.0]", "2.2 [2.0-2.5]"]  # fmt: skip
    assert kproxy == ["kproxy-uvloop", "2.000 [2.000-2.000]", "0.020 [0.020-0.020]",
                      "17.5 [15.0-20.0]", "3.5 [3.0-4.0]", "8.8 [7.5-10.0]"]  # fmt: skip


def test_a_record_made_before_run_queue_wait_was_read_shows_none() -> None:
    runs = [_run("direct", 0, None, 0.0), _run("haproxy", 0, 2000, 0.010)]
    del runs[1]["proxy"]["run_queue_seconds"]
    _, haproxy = ([c.strip() for c in line.split("  ") if c.strip()]
                  for line in wakeup_lines(_results(runs), "w"))  # fmt: skip
    assert haproxy[-1] == "-"


def test_no_wakeups_recorded_no_table() -> None:
    runs = [_run("direct", 0, None, 0.0), _run("haproxy", 0, None, 0.01)]
    assert wakeup_lines(_results(runs), "w") == []


def test_the_results_page_shows_wakeups_per_message_and_cpu_per_wakeup() -> None:
    runs = [
        _run("direct", 0, None, 0.0),
        _run("haproxy", 0, 2000, 0.010),
        _run("kproxy-uvloop", 0, 2000, 0.030),
        _run("direct", 1, None, 0.0),
        _run("haproxy", 1, 3000, 0.012),
        _run("kproxy-uvloop", 1, 2000, 0.040),
    ]
    lines = report.render_workload(_results(runs), "w")
    header = next(line for line in lines if line.startswith("| path"))
    assert header.endswith(
        "| proxy wakeups/msg | proxy CPU us/wakeup | proxy run-queue us/wakeup |"
    ), header
    rows = {line.split(" | ")[0][2:]: line for line in lines if line.startswith("| ")}
    assert rows["direct"].endswith("| - | - | - |")
    assert rows["haproxy"].endswith("| 2.50 [2.00-3.00] | 4.50 [4.00-5.00] | 2.25 [2.00-2.50] |")
    assert rows["kproxy-uvloop"].endswith("| 2.00 | 17.5 [15.0-20.0] | 8.75 [7.50-10.0] |")


def test_a_record_made_before_run_queue_wait_was_read_has_no_wait_column() -> None:
    runs = [_run("direct", 0, None, 0.0), _run("haproxy", 0, 2000, 0.01)]
    del runs[1]["proxy"]["run_queue_seconds"]
    lines = report.render_workload(_results(runs), "w")
    header = next(line for line in lines if line.startswith("| path"))
    assert header.endswith("| proxy CPU us/wakeup |"), header


def test_a_record_made_before_wakeups_were_counted_has_no_wakeup_columns() -> None:
    runs = [_run("direct", 0, None, 0.0), _run("haproxy", 0, None, 0.01)]
    assert not any("wakeup" in line for line in report.render_workload(_results(runs), "w"))


def test_the_wait_table_gives_proxy_client_and_broker_run_queue_per_message() -> None:
    runs = []
    for r, scale in ((0, 1.0), (1, 3.0)):
        for path in ("direct", "haproxy"):
            run = _run(path, r, 2000, 0.010)
            run["result"].update(measured_messages=500, client_run_queue_seconds=0.001 * scale)
            run["broker"] = {"run_queue_seconds": 0.002 * scale}
            runs.append(run)
    runs.append(_run("kproxy-uvloop", 0, None, 0.01))  # none read: no row
    lines = run_queue_lines(_results(runs), "w")
    header, direct, haproxy = ([c.strip() for c in line.split("  ") if c.strip()]
                               for line in lines)  # fmt: skip
    assert header == ["path", "proxy run-queue us/message", "client run-queue us/message",
                      "broker run-queue us/message"]  # fmt: skip
    # The client's over the messages it timed (500), the others' over all 1000.
    assert direct == ["direct", "-", "4.00 [2.00-6.00]", "4.00 [2.00-6.00]"]
    assert haproxy == ["haproxy", "5.00 [5.00-5.00]", "4.00 [2.00-6.00]", "4.00 [2.00-6.00]"]


def test_the_broker_meter_records_the_broker_s_run_queue_wait() -> None:
    record = BrokerMeter(os.getpid()).record(1000)
    assert record is not None
    assert record["run_queue_seconds"] >= 0
