"""The host's steal as the benchmark records it: read from /proc/stat's first line,
taken as a share of the machine's CPU time between two readings, and shown on the
results page and by the A/B."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import bench.catalog
import bench.harness
import bench.one_run
import bench.steal
from bench import report
from bench.harness import Harness, Options
from bench.one_run import measure_run
from bench.steal import StealMeter, cpu_jiffies, run_steal, steal_share

# user nice system idle iowait irq softirq steal guest guest_nice
STAT = """cpu  6140858 427 579105 9388362 17267 0 69475 424905 1000 0
cpu0 3175086 197 296925 4582740 10658 0 34006 210077 0 0
intr 1 2 3
"""


def _stat(user: int, idle: int, steal: int) -> str:
    return f"cpu  {user} 0 0 {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"


def test_the_first_line_gives_steal_and_total_guest_time_not_counted_twice() -> None:
    total = 6140858 + 427 + 579105 + 9388362 + 17267 + 0 + 69475 + 424905
    assert cpu_jiffies(STAT) == (424905, total)


def test_no_steal_column_or_no_cpu_line_is_none() -> None:
    assert cpu_jiffies("cpu  1 2 3 4 5 6 7\n") is None
    assert cpu_jiffies("intr 1 2\n") is None
    assert steal_share(None, (1, 2)) is None
    assert steal_share((1, 2), (1, 2)) is None  # no time passed


def test_share_between_two_readings(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(_stat(user=1000, idle=1000, steal=100))
    meter = StealMeter(stat)
    # 400 jiffies pass: 200 user, 100 idle, 100 stolen.
    stat.write_text(_stat(user=1200, idle=1100, steal=200))
    assert meter.share() == 0.25


def test_this_machine_reads_a_share() -> None:
    share = StealMeter().share()
    # None only where the kernel gives no steal column or no time passed.
    assert share is None or 0.0 <= share <= 1.0


def _results(shares: list[float | None]) -> dict[str, Any]:
    runs = [{"ok": True, "steal": s} for s in shares] + [{"ok": False, "steal": 0.9}]
    return {
        "workloads": {"latency": {"runs": runs}, "other": {"runs": [{"ok": True, "steal": 0.5}]}}
    }


def test_runs_are_summarised_as_percentages() -> None:
    results = _results([0.01, 0.03, None, 0.2])
    assert run_steal(results, "latency") == "3.0% [1.0-20.0%] of the CPU time, 3 runs"
    assert run_steal(results) == "11.5% [1.0-50.0%] of the CPU time, 4 runs"
    assert run_steal({"workloads": {}}) == "-"


def test_the_results_page_states_it() -> None:
    empty = {"meta": {}, "machine": {}, "versions": {}, "paths": {}, "workloads": {}}
    page = report.render_markdown(empty)
    assert "| CPU taken by the host (steal) per run | - |" in page


def test_a_run_records_the_steal_while_its_client_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`measure_run` reads the steal around the client's run alone (here a client
    during which the host took a quarter of the machine's time)."""
    stat = tmp_path / "stat"
    stat.write_text(_stat(user=1000, idle=1000, steal=100))
    monkeypatch.setattr(bench.steal, "PROC_STAT", stat)
    monkeypatch.setattr(bench.harness, "software_versions", dict)

    def generate(*args: object) -> dict[str, Any]:
        stat.write_text(_stat(user=1200, idle=1100, steal=200))
        return {"messages": 1, "bytes": 100}

    monkeypatch.setattr(bench.one_run, "generate", generate)
    opts = Options(workloads=["latency"], paths=["direct"], out_json=tmp_path / "results.json",
                   out_md=None, workdir=tmp_path / "work")  # fmt: skip
    harness = Harness(opts)
    workload = next(w for w in bench.catalog.workloads(quick=True) if w.name == "latency")

    class Upstream:
        def side(self, path: str) -> str:
            return "a"

        def direct_bootstrap(self) -> str:
            return "127.0.0.1:1"

        def create_topic(self, *args: object) -> None:
            pass

        def broker_pid(self, side: str) -> int | None:
            return None

    record = measure_run(harness.opts, workload, Upstream(), "direct", None, 0, "t", [])  # type: ignore[arg-type]
    assert record["ok"], record
    assert record["steal"] == 0.25
