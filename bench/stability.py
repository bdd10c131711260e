"""How still one round's figures hold, for the results page.

Issue 15 asks that rounds last long enough that one round's ratio to direct holds to
about +-0.05. For each proxy and workload the targets judge, this gives how far the
round farthest from the median strayed: the throughput ratio (the p99 ratio for the
latency workload) in absolute terms, and the proxy's CPU per GB (per message for the
latency workload) relative to its median, the figure the issue expects to hold stiller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.results_file import KPROXY_PATHS, per_message, rounds_of, series
from bench.stats import median, round_ratios
from bench.targets import judged_as

STABLE_TO = 0.05
PATHS = ("haproxy", *KPROXY_PATHS)


def farthest(values: Sequence[float | None]) -> tuple[float, float] | None:
    """(median, largest distance of a value from it) of the values measured; None for
    fewer than two."""
    got = [v for v in values if v is not None]
    if len(got) < 2:
        return None
    mid = median(got)
    return mid, max(abs(v - mid) for v in got)


def _cpu(runs: list[dict[str, Any]], path: str, latency: bool, rounds: int) -> list[float | None]:
    """Per round: the proxy's CPU per GB of payload, or per message moved (latency)."""
    if latency:
        return per_message(runs, path, "cpu_seconds", rounds)
    return series(runs, path, "cpu_s_per_gb_payload", rounds, "proxy")


def stability_rows(results: dict[str, Any]) -> list[list[str]]:
    """[workload, path, ratio to direct (median +- farthest), within +-STABLE_TO, CPU's
    farthest round relative to its median] for every judged workload and proxy."""
    rounds = rounds_of(results)
    rows: list[list[str]] = []
    paths = [p for p in PATHS if p in results.get("paths", {})]
    for name, wl in results.get("workloads", {}).items():
        # The figure each judged workload's ratio targets are set on (bench.targets).
        key = {"throughput": "msg_per_s", "latency": "p99_ms"}.get(judged_as(wl) or "")
        if key is None:
            continue
        runs = wl.get("runs", [])
        direct = series(runs, "direct", key, rounds)
        for path in paths:
            ratio = farthest(round_ratios(series(runs, path, key, rounds), direct))
            if ratio is None:
                continue
            mid, off = ratio
            cpu = farthest(_cpu(runs, path, key == "p99_ms", rounds))
            cpu_text = f"+-{cpu[1] / cpu[0]:.0%}" if cpu is not None and cpu[0] else "-"
            ok = "yes" if off <= STABLE_TO else "no"
            rows.append([name, path, f"{mid:.2f} +-{off:.2f}", ok, cpu_text])
    return rows


HEADER = ("workload", "path", "ratio to direct, median +- farthest round",
          f"within +-{STABLE_TO}", "CPU per GB (per message), farthest round")  # fmt: skip


def stability_intro(rows: Sequence[Sequence[str]]) -> str:
    still = sum(r[3] == "yes" for r in rows)
    return (
        f"Each round's ratio to direct, against the median of the rounds: {still} of "
        f"{len(rows)} stay within +-{STABLE_TO} (`bench/stability.py`). The proxy's CPU "
        "per GB moved (per message, for latency) is given as its farthest round's distance "
        "from its median."
    )
