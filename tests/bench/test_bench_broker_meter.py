"""The broker's CPU beside each benchmark run: read from /proc around the run, and shown
on the results page only for runs that recorded it."""

from __future__ import annotations

import os
import time
from typing import Any

from bench import report
from bench.procfs import cpu_times
from bench.proxy_meter import BrokerMeter


def _burn(seconds: float) -> None:
    """Spend at least `seconds` of this process's CPU (polled, with a deadline)."""
    start = sum(cpu_times(os.getpid()))
    deadline = time.monotonic() + 30
    while sum(cpu_times(os.getpid())) - start < seconds:
        assert time.monotonic() < deadline, "the CPU clock did not move"
        sum(i * i for i in range(10_000))


def test_the_broker_cpu_of_a_run_is_what_its_process_spent_over_it() -> None:
    meter = BrokerMeter(os.getpid())
    _burn(0.05)
    record = meter.record(1_000)
    assert record is not None
    assert record["cpu_seconds"] >= 0.05
    assert 0 < record["cpu_user_seconds"] <= record["cpu_seconds"]
    # Microseconds a message: the seconds over 1,000 messages, times a million.
    assert abs(record["cpu_us_per_message"] - record["cpu_seconds"] * 1e3) <= 0.001


def test_no_broker_process_no_record() -> None:
    assert BrokerMeter(None).record(1_000) is None


def test_no_messages_no_cost_per_message() -> None:
    record = BrokerMeter(os.getpid()).record(0)
    assert record is not None and record["cpu_us_per_message"] is None


def _results(broker: list[float | None]) -> dict[str, Any]:
    runs = []
    for r, us in enumerate(broker):
        for path in ("direct", "kproxy-uvloop"):
            run: dict[str, Any] = {"round": r, "path": path, "ok": True,
                                   "result": {"msg_per_s": 100.0}}  # fmt: skip
            if us is not None:
                run["broker"] = {"cpu_us_per_message": us if path == "direct" else 2 * us}
            runs.append(run)
    return {
        "meta": {"rounds": len(broker)},
        "paths": {p: {"status": {"tansu": "ok"}} for p in ("direct", "kproxy-uvloop")},
        "workloads": {
            "produce-1KiB": {"upstream": "tansu", "kind": "produce", "target": "throughput",
                             "metrics": [{"key": "msg_per_s", "label": "msg/s",
                                          "unit": "msg/s", "higher_is_better": True}],
                             "runs": runs},
        },
    }  # fmt: skip


def test_the_results_page_shows_the_brokers_cpu_per_message() -> None:
    lines = report.render_workload(_results([1.0, 3.0, 2.0]), "produce-1KiB")
    header = next(line for line in lines if line.startswith("| path"))
    assert header.endswith("| broker CPU us/msg |")
    direct = next(line for line in lines if line.startswith("| direct"))
    kproxy = next(line for line in lines if line.startswith("| kproxy-uvloop"))
    assert direct.endswith("| 2.00 [1.00-3.00] |"), direct
    assert kproxy.endswith("| 4.00 [2.00-6.00] |"), kproxy


def test_a_record_made_before_the_broker_was_read_has_no_broker_column() -> None:
    lines = report.render_workload(_results([None, None]), "produce-1KiB")
    assert not any("broker CPU" in line for line in lines)
