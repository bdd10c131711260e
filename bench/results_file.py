"""Reading a results file that ``python -m bench run`` wrote: a path's per-round values
of one figure, and each workload's figures summarised per path (median and spread, and
the ratio to direct taken round by round). The results page, the targets and the A/B
all read the file through these."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.stats import ratio_summary, summarize

#: The kproxy paths of a run, each judged against the targets (kproxy-base, an A/B's
#: baseline, is not).
KPROXY_PATHS = ("kproxy-uvloop", "kproxy-asyncio", "kproxy-compiled", "kproxy-compiled-asyncio")
#: The paths that run this checkout's mypyc build, and the event loop each runs it on.
COMPILED_PATHS = {"kproxy-compiled": "uvloop", "kproxy-compiled-asyncio": "asyncio"}


def rounds_of(results: dict[str, Any]) -> int:
    return int(results.get("meta", {}).get("rounds", 1))


def series(
    runs: Sequence[dict[str, Any]], path: str, key: str, rounds: int, section: str = "result"
) -> list[float | None]:
    """Per-round values of ``record[section][key]`` for ``path`` (None where the run
    failed or did not report it)."""
    out: list[float | None] = [None] * rounds
    for run in runs:
        if run.get("path") != path or not run.get("ok"):
            continue
        r = int(run.get("round", 0))
        if 0 <= r < rounds:
            value = (run.get(section) or {}).get(key)
            out[r] = float(value) if value is not None else None
    return out


def per_message(
    runs: Sequence[dict[str, Any]], path: str, key: str, rounds: int, section: str = "proxy"
) -> list[float | None]:
    """Per round: a proxy's /proc figure ``key`` (CPU seconds), or the broker's
    (``section`` "broker"), over the messages the workload moved."""
    return quotients(
        series(runs, path, key, rounds, section), series(runs, path, "messages", rounds)
    )


def quotients(
    values: list[float | None], by: list[float | None], scale: float = 1.0
) -> list[float | None]:
    """Round by round, ``values`` over ``by`` times ``scale``; None where either is
    missing or ``by`` is 0."""
    return [v * scale / b if v is not None and b else None for v, b in zip(values, by, strict=True)]


def paths_in(results: dict[str, Any]) -> list[str]:
    return list(results.get("paths", {}))


def run_errors(runs: Sequence[dict[str, Any]], path: str) -> list[str]:
    """Distinct errors of the failed, not skipped, runs of ``path``."""
    seen: list[str] = []
    for run in runs:
        if run.get("path") == path and not run.get("ok") and not run.get("skipped"):
            err = str(run.get("error", "failed"))
            if err not in seen:
                seen.append(err)
    return seen


def workload_summary(results: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    """``{path: {metric key: {"value": summary, "ratio": summary vs direct}}}`` plus the
    proxy resource figures under ``proxy:<key>`` and ``kproxy:<key>``."""
    wl = results["workloads"][name]
    rounds = rounds_of(results)
    runs = wl.get("runs", [])
    out: dict[str, dict[str, Any]] = {}
    for path in paths_in(results):
        cells: dict[str, Any] = {}
        for metric in wl.get("metrics", []):
            key = metric["key"]
            values = series(runs, path, key, rounds)
            direct = series(runs, "direct", key, rounds)
            cells[key] = {"value": summarize(values), "ratio": ratio_summary(values, direct)}
        for section, keys in (
            ("proxy", ("cpu_seconds", "cpu_s_per_gb_payload", "peak_rss_mb", "rss_mb")),
            ("kproxy", ("cpu_s_per_gb_wire", "cpu_s_per_100k_requests", "requests")),
            ("broker", ("cpu_us_per_message",)),
        ):
            for key in keys:
                cells[f"{section}:{key}"] = summarize(series(runs, path, key, rounds, section))
        cells["errors"] = run_errors(runs, path)
        out[path] = cells
    return out


def path_status(results: dict[str, Any], path: str, upstream: str | None = None) -> str:
    """``ok`` or why the path did not run (on ``upstream``, or on the first upstream
    where it did not)."""
    statuses: dict[str, str] = results.get("paths", {}).get(path, {}).get("status", {})
    if upstream is not None:
        return statuses.get(upstream, "ok")
    for status in statuses.values():
        if status != "ok":
            return status
    return "ok"
