"""CPU time the host took from this virtual machine while a run measured ("steal").

On a shared host the hypervisor runs other guests on this machine's cores; the time a
core was ready to run here and did not is counted as steal in /proc/stat. Rounds under
heavy steal ran every path slower and costlier per message, kproxy more than haproxy
(bench/README.md gives an A/B under 28.5% steal), so each run records the share of CPU
time stolen while it ran, and the results page gives it: a figure measured under heavy
steal is read as such.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.stats import summarize

PROC_STAT = Path("/proc/stat")


def cpu_jiffies(stat_text: str) -> tuple[int, int] | None:
    """(steal, total) of the machine's CPU time from /proc/stat's text: the first line,
    `cpu  user nice system idle iowait irq softirq steal guest guest_nice`. Guest time
    is already inside user and nice, so it is not added again. None: no such line (a
    kernel without the steal column, or not Linux)."""
    for line in stat_text.splitlines():
        fields = line.split()
        if not fields or fields[0] != "cpu":
            continue
        if len(fields) < 9:
            return None
        counts = [int(x) for x in fields[1:9]]
        return counts[7], sum(counts)
    return None


def steal_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of the machine's CPU time stolen between two readings (0..1)."""
    if before is None or after is None:
        return None
    total = after[1] - before[1]
    if total <= 0:
        return None
    return max(0, after[0] - before[0]) / total


class StealMeter:
    """Started when made; `share()` is the steal since then."""

    def __init__(self, stat: Path | None = None) -> None:
        self._stat = PROC_STAT if stat is None else stat
        self._before = self._read()

    def _read(self) -> tuple[int, int] | None:
        try:
            return cpu_jiffies(self._stat.read_text())
        except OSError:
            return None

    def share(self) -> float | None:
        share = steal_share(self._before, self._read())
        return None if share is None else round(share, 4)


def run_steal(results: dict[str, Any], workload: str | None = None) -> str:
    """The host's steal over a results file's runs (one workload's, or all), as a
    percentage: median [min-max] of the runs, "-" when none recorded it."""
    workloads = results.get("workloads", {})
    names = list(workloads) if workload is None else [workload]
    shares = [
        run.get("steal")
        for name in names
        for run in workloads.get(name, {}).get("runs", [])
        if run.get("ok")
    ]
    s = summarize(None if v is None else 100 * v for v in shares)
    if s["median"] is None:
        return "-"
    return f"{s['median']:.1f}% [{s['min']:.1f}-{s['max']:.1f}%] of the CPU time, {s['n']} runs"
