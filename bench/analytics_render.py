"""`bench/ANALYTICS_RESULTS.md` from `bench/analytics_results.json`: the machine, each
size's figures for `kproxy analyze` and for the plain reading, and how both grow."""

from __future__ import annotations

import itertools
import os
import platform
import subprocess
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    except OSError:
        mem_kb = 0
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    import pyspark

    return {
        "cpus": os.cpu_count(),
        "cpu": model,
        "memory_gb": round(mem_kb / 2**20, 1),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "java": java.splitlines()[0] if java else "?",
    }


def _growth(rows: list[dict[str, Any]]) -> list[str]:
    """How each reader's time and memory grow from one size to the next."""
    if len(rows) < 2:
        return []
    out = ["", "How cost grows with input (between consecutive sizes):", ""]
    for a, b in itertools.pairwise(rows):
        millions = (b["events"] - a["events"]) / 1e6
        spark = (b["spark"]["wall_s"] - a["spark"]["wall_s"]) / millions
        plain = (b["python"]["wall_s"] - a["python"]["wall_s"]) / millions
        out.append(
            f"* {a['size']} to {b['size']}: kproxy analyze +{spark:.1f} s per million events, "
            f"plain Python +{plain:.1f} s; peak memory {a['spark']['peak_tree_rss_mb']:,.0f} "
            f"to {b['spark']['peak_tree_rss_mb']:,.0f} MB against "
            f"{a['python']['peak_tree_rss_mb']:,.0f} to {b['python']['peak_tree_rss_mb']:,.0f} MB"
        )
    first = rows[0]
    fixed = first["spark"]["wall_s"] - first["python"]["wall_s"]
    out += [
        "",
        f"Spark's fixed cost (JVM and session start, per-stage scheduling, writing the "
        f"tables and report) is the bulk at {first['size']} ({fixed:.0f} s more than the "
        "plain reading). Past it, time grows linearly for both, and Spark's memory stays "
        "flat while the plain reading's grows with the input (it holds every value it "
        "takes an exact percentile of). On two cores one Python process keeps up; Spark's "
        "answer to a fleet that outgrows one machine is `--master`: the same job on a "
        "cluster, its input split across executors.",
    ]
    return out


def render_md(results: dict[str, Any]) -> str:
    m = results["machine"]
    rows = sorted(results["sizes"].values(), key=lambda r: r["events"])
    lines = [
        "# `kproxy analyze` at fleet scale",
        "",
        "Written by `python -m bench.analytics_bench` (bench/analytics_bench.py); the raw",
        "figures are in `bench/analytics_results.json`. The input is the synthetic fleet log",
        "of `bench/analytics_gen.py` (seed 1: 40 proxies, 600 client ids, 150 topics,",
        "12 brokers, 6 hours; ~95% request samples, ~1% redirects, ~0.9% recoveries,",
        "~0.4% leader changes, 0.01% rejected lines), each proxy's log rotated every hour",
        "as kproxy rotates it: 240 files whatever the size.",
        "",
        f"Machine: {m['cpus']} cores ({m['cpu']}), {m['memory_gb']} GB; Python "
        f"{m['python']}, PySpark {m['pyspark']}, {m['java']}.",
        "",
        "* **kproxy analyze**: `kproxy analyze DIR --out OUT` (default `local[*]`, default",
        "  driver memory), from process start to exit: JVM start, reading and classifying",
        "  every line, writing the Parquet copy, every table, the plots and report.html.",
        "  Peak memory is the sum of the resident memory of the whole process tree (Python",
        "  driver and Spark's JVM) at its highest sample (every 0.2 s); JVM peak is that of",
        "  the largest single process. (`getrusage(RUSAGE_CHILDREN).ru_maxrss`, in the JSON,",
        "  sees only the Python driver: the JVM is a grandchild nobody waits for.)",
        "* **plain Python**: one process, `json.loads` on every line, the same counts, exact",
        "  recovery percentiles (overall, per path, per client) and exact latency",
        "  percentiles per API; no tables or report written.",
        "* **agree**: the job's summary.json and the plain reading give the same figures",
        "  (events and rejects by kind, leader moves, redirects by path, recovery and",
        "  latency percentiles).",
        "* **load before**: the 1, 5 and 15 minute load averages when the run started (this",
        "  machine is shared: a load above 0 means another process was using the cores).",
        "",
        "| events | input | files | kproxy analyze wall | peak RSS (tree) | JVM peak |"
        " plain Python wall | plain Python peak RSS | Spark / Python time | agree | load before |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---|",
    ]
    for r in rows:
        s, p = r["spark"], r["python"]
        lines.append(
            f"| {r['size']} | {r['input_mb']:,.0f} MB | {r['files']} | {s['wall_s']:,.0f} s "
            f"| {s['peak_tree_rss_mb']:,.0f} MB | {s['peak_single_rss_mb']:,.0f} MB "
            f"| {p['wall_s']:,.0f} s | {p['peak_tree_rss_mb']:,.0f} MB "
            f"| {s['wall_s'] / p['wall_s']:.1f} | {'yes' if r['figures_agree'] else 'NO'} "
            f"| {r['load_before']} |"
        )
    lines += _growth(rows)
    lines += ["", "Per run:", ""]
    for r in rows:
        h = r["headline"]
        share = h["endpoint_share"]
        lines.append(
            f"* {r['size']} ({r['when']}): {r['events']:,} events, events Parquet "
            f"{r['events_parquet_mb']:,.0f} MB; generated in {r['generate_s']} s; "
            f"{h['leader_moves']:,} leader moves, {h['redirects']:,} redirects "
            f"({100 * share:.1f}% with NodeEndpoints), {h['recoveries']:,} recoveries "
            f"(p99 {h['recovery_p99_ms']:.1f} ms)"
            if share is not None and h["recoveries"]
            else f"* {r['size']} ({r['when']}): {r['events']:,} events"
        )
        for d in r["differences"]:
            lines.append(f"  * differs: {d}")
    lines += [
        "",
        "Reproduce: `python -m bench.analytics_bench 1M 5M 20M` (data is generated on the",
        "first run under `~/.cache/kproxy-bench/analytics`, or `$KPROXY_BENCH_DATA`).",
        "",
    ]
    return "\n".join(lines)
