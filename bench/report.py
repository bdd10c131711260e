"""Turn a benchmark results file into ``RESULTS.md``.

Everything here reads only the JSON that ``python -m bench run`` writes, so a report can
be regenerated (``python -m bench report bench/results.json``) without running anything.
Every figure is the median over rounds with its spread (min-max); every ratio is taken
per round against direct measured in the same round, then summarised the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.formats import fmt_ratio, fmt_summary
from bench.results_file import KPROXY_PATHS, path_status, rounds_of, series, workload_summary
from bench.stats import ORDER, summarize
from bench.steal import run_steal
from bench.targets import evaluate_targets, met_share

#: The path the targets are judged on (kproxy's default event loop).
KPROXY = "kproxy-uvloop"


def _order_words(meta: dict[str, Any]) -> str:
    """How the run ordered its rounds (``bench.stats.round_order``); runs recorded before
    the order was written down kept the given order in every round."""
    if meta.get("order") == ORDER:
        return "direct first, the others forward and backward in turn: A B C D, A D C B, ..."
    return "the same order every round: A B C D A B C D ..."


def _warm_up_words(results: dict[str, Any]) -> list[str]:
    """Which upstreams' workloads ran once untimed on direct before their first round
    (`Upstream.warms_up`); none in runs recorded before the harness did."""
    titles = [u.get("title", name) for name, u in results.get("upstreams", {}).items()
              if u.get("warm_up")]  # fmt: skip
    if not titles:
        return []
    return [
        "",
        f"On {', '.join(titles)} each workload first ran once on direct, untimed: the "
        "broker's JVM compiles its path for a workload in the first seconds, and direct, "
        "first in every round, would pay for it.",
    ]


def _paired_words(meta: dict[str, Any]) -> list[str]:
    """A run with ``--paired N`` (`bench.paired`): which workloads took turns."""
    turns = meta.get("paired_segments")
    if not turns:
        return []
    if isinstance(turns, dict):
        each = ", ".join(f"{v} turns each on {k}" for k, v in turns.items())
    else:
        each = f"{turns} turns each"
    return [
        "",
        "Paired rounds (`--paired`): in the latency, consume and Apache Kafka "
        "produce workloads every path of a round ran in one client process, taking "
        f"{each}, the order rotated every turn, so that a slow spell of the "
        "machine falls on every path alike (`bench/paired.py`); the other workloads ran "
        "one path after another.",
    ]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    return lines


def _params_text(wl: dict[str, Any]) -> str:
    p = wl.get("params", {})
    parts = []
    for key in ("count", "size", "acks", "idle", "seconds", "partitions", "interval"):
        if key in p:
            value = p[key]
            parts.append(f"{key}={value:,}" if isinstance(value, int) else f"{key}={value}")
    return ", ".join(parts)


def render_workload(results: dict[str, Any], name: str) -> list[str]:
    wl = results["workloads"][name]
    summary = workload_summary(results, name)
    upstream = wl.get("upstream", "")
    title = results.get("upstreams", {}).get(upstream, {}).get("title", upstream)
    lines = [f"### {name}: {wl.get('title', name)}", ""]
    lines.append(f"Upstream: {title}. Load: {wl.get('generator', '')} ({_params_text(wl)}).")
    lines.append("")
    metrics = wl.get("metrics", [])
    header = ["path"]
    for m in metrics:
        header += [f"{m['label']} ({m['unit']})", "ratio to direct"]
    header += ["proxy CPU s/GB", "proxy peak RSS (MB)"]
    # Runs recorded before the harness read the broker's CPU have no column for it.
    with_broker = any(c["broker:cpu_us_per_message"]["n"] for c in summary.values())
    if with_broker:
        header.append("broker CPU us/msg")
    rows = []
    notes: list[str] = []
    for path, cells in summary.items():
        status = path_status(results, path, upstream)
        if status != "ok":
            rows.append([path] + ["-"] * (len(header) - 1))
            notes.append(f"{path}: {status}")
            continue
        row = [path]
        for m in metrics:
            cell = cells[m["key"]]
            row.append(fmt_summary(cell["value"]))
            row.append("1" if path == "direct" else fmt_ratio(cell["ratio"]))
        row.append(fmt_summary(cells["proxy:cpu_s_per_gb_payload"]))
        row.append(fmt_summary(cells["proxy:peak_rss_mb"]))
        if with_broker:
            row.append(fmt_summary(cells["broker:cpu_us_per_message"]))
        rows.append(row)
        for err in cells["errors"]:
            notes.append(f"{path}: a run failed: {err}")
    lines += _table(header, rows)
    if wl.get("kind") == "connections":
        lines += ["", "RSS of each proxy before the idle connections, with them, and at peak:"]
        lines.append("")
        rounds = rounds_of(results)
        runs = wl.get("runs", [])
        mem_rows = []
        for path in summary:
            if path == "direct" or path_status(results, path, upstream) != "ok":
                continue
            before = summarize(series(runs, path, "rss_before_mb", rounds))
            with_idle = summarize(series(runs, path, "rss_idle_mb", rounds))
            delta = summarize(series(runs, path, "rss_delta_mb", rounds))
            peak = summarize(series(runs, path, "peak_rss_mb", rounds, "proxy"))
            figures = [before, with_idle, delta, peak]
            mem_rows.append([path, *(fmt_summary(f) for f in figures)])
        lines += _table(
            ["path", "before (MB)", "with idle (MB)", "added (MB)", "peak (MB)"], mem_rows
        )
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    lines.append("")
    return lines


def render_kproxy_resources(results: dict[str, Any]) -> list[str]:
    rows = []
    for name in results.get("workloads", {}):
        summary = workload_summary(results, name)
        for path in KPROXY_PATHS:
            cells = summary.get(path)
            if cells is None or not cells["kproxy:cpu_s_per_gb_wire"].get("n"):
                continue
            rows.append(
                [
                    name,
                    path,
                    fmt_summary(cells["proxy:cpu_seconds"]),
                    fmt_summary(cells["kproxy:cpu_s_per_gb_wire"]),
                    fmt_summary(cells["kproxy:cpu_s_per_100k_requests"]),
                    fmt_summary(cells["proxy:peak_rss_mb"]),
                ]
            )
    if not rows:
        return ["No kproxy run completed.", ""]
    header = ["workload", "path", "CPU s (run)", "CPU s per GB moved", "CPU s per 100k requests",
              "peak RSS (MB)"]  # fmt: skip
    return [
        *_table(header, rows),
        "",
        "GB moved counts the bytes of every frame in both directions (kproxy's "
        '`kproxy_bytes_total`), requests its `kproxy_frames_total{direction="request"}`; CPU '
        "is utime + stime from `/proc/PID/stat` over the run, peak RSS is `VmHWM` after "
        "resetting it (`/proc/PID/clear_refs`) at the start of the run.",
        "",
    ]


def render_markdown(
    results: dict[str, Any],
    source: str = "bench/results.json",
    notes: str = "",
) -> str:
    """``source``: the results file, as the regenerate command should name it; ``notes``:
    what was written by hand on this run, shown after the count of targets met."""
    meta = results.get("meta", {})
    machine = results.get("machine", {})
    versions = results.get("versions", {})
    command = " ".join(["python -m bench", *meta.get("argv", ["run"])])
    lines = ["# kproxy benchmark results", ""]
    lines.append(
        f"Generated by `{command}` ({meta.get('mode', '?')} mode, "
        f"{meta.get('rounds', '?')} interleaved rounds) from `{meta.get('started', '?')}` to "
        f"`{meta.get('finished', '?')}`, {float(meta.get('wall_seconds', 0)) / 60:.1f} minutes "
        "of wall time. Regenerate this file from the JSON with "
        f"`python -m bench report {source}`."
    )
    if meta.get("interrupted"):
        lines += ["", "**The run was interrupted: the figures below are partial.**"]
    lines += [
        "",
        "Every figure is the median over rounds with its spread `[min-max]`; a ratio is "
        "taken in each round against direct measured in the same round (paths run "
        f"interleaved, {_order_words(meta)}), then summarised the same way. Only ratios "
        "measured in one run mean anything on a shared machine.",
        *_paired_words(meta),
        *_warm_up_words(results),
        "",
        "## Machine",
        "",
    ]
    load = machine.get("load_average") or []
    load_end = machine.get("load_average_end") or []
    rows = [
        ["CPU", str(machine.get("cpu_model"))],
        ["cores", str(machine.get("cores"))],
        ["memory", f"{machine.get('memory_gb')} GB"],
        ["kernel", str(machine.get("kernel"))],
        ["python", str(machine.get("python"))],
        ["load average at start / end",
         f"{', '.join(f'{x:.2f}' for x in load)} / {', '.join(f'{x:.2f}' for x in load_end)}"],
        ["CPU taken by the host (steal) per run", run_steal(results)],
    ]  # fmt: skip
    rows += [[name, str(v) if v is not None else "not installed"] for name, v in versions.items()]
    lines += _table(["", ""], rows)
    lines += ["", "## Paths", ""]
    prow = []
    for path, info in results.get("paths", {}).items():
        statuses = info.get("status", {})
        text = "; ".join(f"{u}: {s}" for u, s in statuses.items()) or "not run"
        prow.append([path, info.get("description", ""), text])
    lines += _table(["path", "what", "status per upstream"], prow)

    verdicts = evaluate_targets(results)
    lines += ["", "## Targets", "", f"{met_share(verdicts)}; see `bench/targets.py`.", ""]
    if notes:
        lines += [notes, ""]
    lines += _table(
        ["target", "measured", "status"], [[v.target, v.measured, v.status] for v in verdicts]
    )
    lines += ["", "## Workloads", ""]
    for name in results.get("workloads", {}):
        lines += render_workload(results, name)
    lines += ["## kproxy's resources", ""]
    lines += render_kproxy_resources(results)
    return "\n".join(lines).rstrip() + "\n"


#: Where sections written by other benchmarks start in RESULTS.md (kept on re-render).
APPENDED_SECTIONS = "<!-- tls_bench -->"
#: Where notes written by hand on one run end (they start at `run_notes_start`).
RUN_NOTES_END = "<!-- /notes -->"


def run_notes_start(results: dict[str, Any]) -> str:
    """The marker that opens hand-written notes on the run of ``results``: named by the
    run's start, so that notes on one run never carry over onto the page of another."""
    return f"<!-- notes on the run started {results.get('meta', {}).get('started', '?')} -->"


def kept_run_notes(old: str, results: dict[str, Any]) -> str:
    """The notes on this run in ``old`` (a page rendered before), markers included."""
    start = old.find(run_notes_start(results))
    end = old.find(RUN_NOTES_END, start)
    return old[start : end + len(RUN_NOTES_END)] if start >= 0 and end >= 0 else ""


def write_outputs(results: dict[str, Any], md: Path, source: Path) -> None:
    """RESULTS.md for ``results``, read from (or saved to) ``source``."""
    md.parent.mkdir(parents=True, exist_ok=True)
    # Sections other benchmarks append (bench.tls_bench) stay where they are, and so do
    # notes written by hand on this same run.
    old = md.read_text() if md.exists() else ""
    kept = old[old.index(APPENDED_SECTIONS) :] if APPENDED_SECTIONS in old else ""
    text = render_markdown(results, _shown_path(source), kept_run_notes(old, results))
    md.write_text(text + ("\n" + kept if kept else ""))


def _shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
