"""What `python -m bench ab` prints: one table row per path (medians and spreads, the
ratio to direct taken round by round), how still each proxy held, the syscalls and
native CPU per message when recorded, and the tree against the baseline round by
round."""

from __future__ import annotations

from typing import Any

from bench.results_file import KPROXY_PATHS as TARGET_PATHS
from bench.results_file import per_message, per_wakeup, quotients, rounds_of, series
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
        # What the broker behind the path spent per message in the same run (none for
        # the mock cluster): a round slowed by the broker shows here as well.
        broker = summarize(series(runs, path, "cpu_us_per_message", rounds, "broker"))
        row.append(_span(broker, ".2f"))
        rows.append(row)
    return _aligned(rows)


def stability_lines(results: dict[str, Any]) -> list[str]:
    """How far each proxy's farthest round strayed from its median ratio to direct
    (`bench.stability`), for a workload the targets judge: none for another."""
    from bench.stability import HEADER, stability_rows

    rows = stability_rows(results)
    return _aligned([list(HEADER), *rows]) if rows else []


def wakeup_lines(results: dict[str, Any], workload: str) -> list[str]:
    """Each proxy's wakeups (voluntary context switches: sleeps in epoll_wait, mostly)
    and preemptions per message moved, and its CPU, user time and run-queue wait per
    wakeup, medians over the rounds. Two proxies that wake as often differ per wakeup:
    what each does with the caches it finds there, and how long it waits for a core
    before it runs (docs/performance.md, "Wakeups"). None without a run that counted
    them."""
    wl = results["workloads"][workload]
    runs, rounds = wl.get("runs", []), rounds_of(results)
    rows = [["path", "wakeups/message", "preemptions/message", "CPU us/wakeup",
             "user us/wakeup", "run-queue us/wakeup"]]  # fmt: skip
    for path in results["paths"]:
        wakeups = per_message(runs, path, "wakeups", rounds)
        if path == "direct" or all(w is None for w in wakeups):
            continue
        preempted = per_message(runs, path, "preemptions", rounds)
        row = [path, _span(summarize(wakeups), ".3f"), _span(summarize(preempted), ".3f")]
        for key in ("cpu_seconds", "cpu_user_seconds", "run_queue_seconds"):
            row.append(_span(summarize(per_wakeup(runs, path, key, rounds)), ".1f"))
        rows.append(row)
    return _aligned(rows) if len(rows) > 1 else []


def run_queue_lines(results: dict[str, Any], workload: str) -> list[str]:
    """Who waited for a core, microseconds a message moved (medians over the rounds):
    the proxy, the client while it was timed, and the broker. A path's round trip holds
    every wait on it, and on a host of few cores a proxy that keeps a core longer may
    make the client and the broker wait (docs/performance.md, "Wakeups"). Paired rounds
    record no client's and no broker's: their paths share both. None without a run that
    read them."""
    wl = results["workloads"][workload]
    runs, rounds = wl.get("runs", []), rounds_of(results)
    rows = [["path", "proxy run-queue us/message", "client run-queue us/message",
             "broker run-queue us/message"]]  # fmt: skip
    for path in results["paths"]:
        waits = [
            per_message(runs, path, "run_queue_seconds", rounds),
            quotients(series(runs, path, "client_run_queue_seconds", rounds),
                       series(runs, path, "measured_messages", rounds)),
            per_message(runs, path, "run_queue_seconds", rounds, "broker"),
        ]  # fmt: skip
        cells = [summarize(None if v is None else v * 1e6 for v in w) for w in waits]
        if all(c["median"] is None for c in cells):
            continue
        rows.append([path, *(_span(c, ".2f") for c in cells)])
    return _aligned(rows) if len(rows) > 1 else []


def syscall_lines(results: dict[str, Any], workload: str) -> list[str]:
    """A run with ``--syscalls``: each proxy's syscalls per message moved, by syscall
    (median over the rounds; those below 0.01 per message on every path left out)."""
    return _by_name_lines(results, workload, "syscalls_by_name", "syscalls per message",
                          1.0, 0.01, ".3f")  # fmt: skip


def object_lines(results: dict[str, Any], workload: str) -> list[str]:
    """A run with ``--native-profile``: each proxy's CPU microseconds per message moved,
    by the object they went to (median over the rounds; below 0.1 us everywhere left
    out)."""
    return _by_name_lines(results, workload, "cpu_seconds_by_object", "CPU us per message",
                          1e6, 0.1, ".1f")  # fmt: skip


def _by_name_lines(
    results: dict[str, Any],
    workload: str,
    key: str,
    title: str,
    scale: float,
    least: float,
    spec: str,
) -> list[str]:
    """A table of a proxy figure kept by name (``key`` of a run's ``proxy`` record), per
    message moved times ``scale``: one row per name, the largest first, one column per
    path; names below ``least`` on every path left out."""
    wl = results["workloads"][workload]
    runs, rounds = wl.get("runs", []), rounds_of(results)
    table: dict[str, dict[str, float]] = {}
    for path in results["paths"]:
        messages = series(runs, path, "messages", rounds)
        per_round: dict[str, list[float | None]] = {}
        for run in runs:
            by_name = (run.get("proxy") or {}).get(key)
            if run.get("path") != path or not run.get("ok") or not by_name:
                continue
            moved = messages[int(run.get("round", 0))]
            for name, value in by_name.items():
                per_round.setdefault(name, []).append(value * scale / moved if moved else None)
        for name, values in per_round.items():
            median = summarize(values)["median"]
            if median is not None:
                table.setdefault(name, {})[path] = median
    paths = [p for p in results["paths"] if any(p in row for row in table.values())]
    names = sorted((n for n, row in table.items() if max(row.values()) >= least),
                   key=lambda n: -max(table[n].values()))  # fmt: skip
    rows = [[title, *paths]]
    rows += [[n, *(format(table[n].get(p, 0.0), spec) for p in paths)] for n in names]
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
