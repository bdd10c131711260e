"""What `python -m bench ab` prints: one table row per path (medians and spreads, the
ratio to direct taken round by round), how still each proxy held, and the tree against
the baseline round by round."""

from __future__ import annotations

from typing import Any

from bench.results_file import KPROXY_PATHS as TARGET_PATHS
from bench.results_file import per_message, rounds_of, series
from bench.stats import ratio_summary, summarize

KPROXY_PATHS = (*TARGET_PATHS, "kproxy-base")  # the targets' kproxy paths and the baseline


def _span(s: dict[str, Any], fmt: str) -> str:
    if s["median"] is None:
        return "-"
    return f"{s['median']:{fmt}} [{s['min']:{fmt}}-{s['max']:{fmt}}]"


def _aligned(rows: list[list[str]]) -> list[str]:
    """Rows as lines of left-aligned columns."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]


def summary_lines(results: dict[str, Any], workload: str) -> list[str]:
    """One row per path: the workload's figures as medians [min-max] over the rounds,
    the ratio to direct taken per round, and kproxy's CPU per request and per GB."""
    wl = results["workloads"][workload]
    runs, rounds = wl.get("runs", []), rounds_of(results)
    metrics = wl["metrics"]
    primary = metrics[0]["key"]
    header = ["path", *(f"{m['label']} ({m['unit']})" for m in metrics), "ratio to direct",
              "CPU us/message", "user us/message", "CPU us/request", "CPU s/GB",
              "broker CPU us/message"]  # fmt: skip
    rows = [header]
    direct = series(runs, "direct", primary, rounds)
    for path in results["paths"]:
        row = [path]
        row += [_span(summarize(series(runs, path, m["key"], rounds)), ",.2f") for m in metrics]
        ratio = ratio_summary(series(runs, path, primary, rounds), direct)
        row.append("-" if path == "direct" else _span(ratio, ".2f"))
        # Any proxy's CPU (haproxy's too) over the messages the workload moved, and of it
        # user space: the proxy's own code (the rest is the kernel's, its syscalls).
        for key in ("cpu_seconds", "cpu_user_seconds"):
            seconds = per_message(runs, path, key, rounds)
            micros = [None if v is None else v * 1e6 for v in seconds]
            row.append("-" if path == "direct" else _span(summarize(micros), ".1f"))
        per_100k = summarize(series(runs, path, "cpu_s_per_100k_requests", rounds, "kproxy"))
        us = {k: (v * 10 if isinstance(v, float) else v) for k, v in per_100k.items()}
        row.append(_span(us, ".1f") if path in KPROXY_PATHS else "-")
        per_gb = summarize(series(runs, path, "cpu_s_per_gb_wire", rounds, "kproxy"))
        row.append(_span(per_gb, ".3f") if path in KPROXY_PATHS else "-")
        # What the broker behind the path spent per message in the same run: a round
        # slowed by the broker shows here as well.
        broker = summarize(series(runs, path, "cpu_us_per_message", rounds, "broker"))
        row.append(_span(broker, ".2f"))
        rows.append(row)
    return _aligned(rows)


def paired_lines(results: dict[str, Any], workload: str, path: str, base: str) -> list[str]:
    """``path`` against ``base`` round by round: the ratio of the workload's figure and of
    the CPU per message in each round, and in how many rounds ``path`` used less CPU.
    Rounds share the machine's weather, so these ratios hold far stiller than either
    side's own spread; a same-code run shows how still (bench/README.md)."""
    wl = results["workloads"][workload]
    runs, rounds = wl.get("runs", []), rounds_of(results)
    primary = wl["metrics"][0]

    figure = ratio_summary(series(runs, path, primary["key"], rounds),
                           series(runs, base, primary["key"], rounds))  # fmt: skip
    ours = per_message(runs, path, "cpu_seconds", rounds)
    theirs = per_message(runs, base, "cpu_seconds", rounds)
    cpu = ratio_summary(ours, theirs)
    paired = [(a, b) for a, b in zip(ours, theirs, strict=True) if a is not None and b is not None]
    lower = sum(1 for a, b in paired if a < b)
    return [
        f"{path} against {base}, round by round:",
        f"  {primary['label']}: {_span(figure, '.3f')}",
        f"  CPU per message: {_span(cpu, '.3f')}, less in {lower} of {len(paired)} rounds",
    ]
