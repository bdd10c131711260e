"""Wakeups beside a proxy's CPU: its voluntary context switches over a run, every
thread's, from /proc, and the A/B's table of them per message and CPU per wakeup."""

from __future__ import annotations

import os
import select
import threading
from typing import Any

from bench import report
from bench.ab_tables import wakeup_lines
from bench.procfs import CpuSince, context_switches
from bench.proxy_meter import ProxyMeter


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


def _run(path: str, r: int, wakeups: int | None, cpu: float) -> dict[str, Any]:
    record: dict[str, Any] = {"round": r, "path": path, "ok": True,
                              "result": {"msg_per_s": 100.0, "messages": 1000}}  # fmt: skip
    if path != "direct":
        record["proxy"] = {"cpu_seconds": cpu, "cpu_user_seconds": cpu / 5}
        if wakeups is not None:
            record["proxy"].update(wakeups=wakeups, preemptions=wakeups // 100)
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
                      "user us/wakeup"]  # fmt: skip
    assert haproxy == ["haproxy", "2.500 [2.000-3.000]", "0.025 [0.020-0.030]",
                       "4.5 [4.0-5.0]", "0.9 [0.8-1.0]"]  # fmt: skip
    assert kproxy == ["kproxy-uvloop", "2.000 [2.000-2.000]", "0.020 [0.020-0.020]",
                      "17.5 [15.0-20.0]", "3.5 [3.0-4.0]"]  # fmt: skip


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
    assert header.endswith("| proxy wakeups/msg | proxy CPU us/wakeup |"), header
    rows = {line.split(" | ")[0][2:]: line for line in lines if line.startswith("| ")}
    assert rows["direct"].endswith("| - | - |")
    assert rows["haproxy"].endswith("| 2.50 [2.00-3.00] | 4.50 [4.00-5.00] |")
    assert rows["kproxy-uvloop"].endswith("| 2.00 | 17.5 [15.0-20.0] |")


def test_a_record_made_before_wakeups_were_counted_has_no_wakeup_columns() -> None:
    runs = [_run("direct", 0, None, 0.0), _run("haproxy", 0, None, 0.01)]
    assert not any("wakeup" in line for line in report.render_workload(_results(runs), "w"))
