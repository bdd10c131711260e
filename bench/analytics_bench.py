"""`kproxy analyze` at fleet scale, against a plain Python reading of the same files:

    python -m bench.analytics_bench [SIZE ...] [--data DIR] [--master URL]

SIZE is a count of events (`1M`, `5M`, `20M`, `250k`, `1000000`; default 1M 5M 20M).
For each size:

1. the synthetic fleet log (bench/analytics_gen.py, seed 1) is generated under
   `--data` (default `$KPROXY_BENCH_DATA` or `~/.cache/kproxy-bench/analytics`) unless
   it is already there;
2. `kproxy analyze DATA --out ANALYSIS` runs as a subprocess: wall time, and the peak
   resident memory of its whole process tree (Python driver + Spark's JVM), sampled
   from /proc every 0.2 s; `getrusage(RUSAGE_CHILDREN).ru_maxrss` is recorded too (it
   is the largest single process, not the sum);
3. the baseline runs as a subprocess, measured the same way: one Python process that
   `json.loads` every line and computes the same figures (events and rejects by kind,
   leader moves, redirects by API, path and route, exact recovery percentiles overall,
   per path and per client, exact latency percentiles per API);
4. the two sets of figures are compared (they must agree), and the results go to
   `bench/analytics_results.json` (one entry per size, kept across runs) and
   `bench/ANALYTICS_RESULTS.md`.

Not a test: nothing here asserts a time. Run it on a quiet machine; the load average
before each run is recorded next to its figures.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import itertools
import json
import math
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from bench.analytics_gen import FleetSpec, generate
from kproxy.events import EVENT_TYPES, SCHEMA_VERSION

REPO = Path(__file__).resolve().parent.parent
RESULTS_JSON = REPO / "bench" / "analytics_results.json"
RESULTS_MD = REPO / "bench" / "ANALYTICS_RESULTS.md"
DEFAULT_SIZES = ("1M", "5M", "20M")
PERCENTILES = (0.5, 0.9, 0.99)
PAGE = os.sysconf("SC_PAGE_SIZE")


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1M, 250k, 1000000)")
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def size_label(events: int) -> str:
    if events % 1_000_000 == 0:
        return f"{events // 1_000_000}M"
    if events % 1_000 == 0:
        return f"{events // 1_000}k"
    return str(events)


def default_data() -> Path:
    env = os.environ.get("KPROXY_BENCH_DATA")
    return Path(env) if env else Path.home() / ".cache" / "kproxy-bench" / "analytics"


# -- memory of a process tree -----------------------------------------------------------------


class TreeMemory(threading.Thread):
    """Samples the resident memory of `root` and all its descendants from /proc."""

    def __init__(self, root: int, interval: float = 0.2) -> None:
        super().__init__(name="tree-memory", daemon=True)
        self.root = root
        self.interval = interval
        self.peak_total = 0  # bytes: the largest sum over the tree at one instant
        self.peak_single = 0  # bytes: the largest single process
        self.peak_by_name: dict[str, int] = {}  # bytes: each command's largest process
        self.samples = 0
        self._done = threading.Event()

    @staticmethod
    def _table() -> dict[int, tuple[int, int, str]]:
        """pid -> (ppid, rss bytes, command name) of every process."""
        table = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue  # gone in between
            name = stat[stat.find(b"(") + 1 : stat.rfind(b")")].decode(errors="replace")
            fields = stat[stat.rfind(b")") + 2 :].split()
            # After "pid (comm) ": state, ppid, ... rss is field 24 of stat(5).
            table[int(entry.name)] = (int(fields[1]), int(fields[21]) * PAGE, name)
        return table

    def sample(self) -> None:
        table = self._table()
        children: dict[int, list[int]] = defaultdict(list)
        for pid, (ppid, _, _) in table.items():
            children[ppid].append(pid)
        tree, stack = [], [self.root]
        while stack:
            pid = stack.pop()
            if pid in table:
                tree.append(pid)
                stack.extend(children.get(pid, ()))
        rss = [table[pid][1] for pid in tree]
        for pid in tree:
            _, size, name = table[pid]
            self.peak_by_name[name] = max(self.peak_by_name.get(name, 0), size)
        if rss:
            self.peak_total = max(self.peak_total, sum(rss))
            self.peak_single = max(self.peak_single, max(rss))
            self.samples += 1

    def run(self) -> None:
        while not self._done.is_set():
            self.sample()
            self._done.wait(self.interval)

    def stop(self) -> None:
        self._done.set()
        self.join(5)


def measured(argv: list[str], log: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `argv` to completion; wall time, tree memory, exit code (output into `log`)."""
    with open(log, "wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        memory = TreeMemory(proc.pid)
        memory.start()
        try:
            code = proc.wait()
        finally:
            memory.stop()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        wall = time.monotonic() - started
    return {
        "exit_code": code,
        "wall_s": round(wall, 2),
        "peak_tree_rss_mb": round(memory.peak_total / 2**20, 1),
        "peak_single_rss_mb": round(memory.peak_single / 2**20, 1),
        "peak_rss_mb_by_command": {
            name: round(size / 2**20, 1) for name, size in sorted(memory.peak_by_name.items())
        },
        "rss_samples": memory.samples,
        # ru_maxrss (KiB): the largest descendant waited for so far in this process. It
        # misses Spark's JVM, which the driver starts and does not wait for.
        "ru_maxrss_children_mb": round(
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1
        ),
    }


# -- the plain Python reading ---------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float | None:
    """Exact, linear interpolation between the two nearest ranks (as the job's)."""
    if not values:
        return None
    rank = (len(values) - 1) * p
    lo = math.floor(rank)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (rank - lo)


def _stats(values: array[float]) -> dict[str, Any]:
    ordered = sorted(values)
    out: dict[str, Any] = {"n": len(ordered)}
    for p in PERCENTILES:
        out[f"p{round(p * 100)}"] = percentile(ordered, p)
    return out


def _lines(path: Path) -> Iterator[str]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    f: IO[str]
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        yield from f


def _input_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))


def baseline(root: Path) -> dict[str, Any]:
    """One process, one pass over every line: the figures the job's report shows."""
    types: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    moves: set[tuple[Any, ...]] = set()
    unmatched_moves = 0
    redirects: Counter[str] = Counter()
    routes: Counter[tuple[Any, Any]] = Counter()
    recovery: dict[str, array[float]] = defaultdict(lambda: array("d"))
    per_client: dict[Any, array[float]] = defaultdict(lambda: array("d"))
    latency: dict[tuple[str, str], array[float]] = defaultdict(lambda: array("d"))

    def tally(kind: str, e: dict[str, Any]) -> None:
        nonlocal unmatched_moves
        if kind == "request_sample":
            total, upstream = float(e["total_ms"]), float(e["upstream_ms"])
            latency[(e["api"], "total")].append(total)
            latency[(e["api"], "upstream")].append(upstream)
        elif kind == "redirect":
            to = e["to_node"]
            fast = e["with_endpoint"]
            redirects["no_leader" if to is None else "fast_path" if fast else "leader_only"] += 1
            routes[(e["from_node"], to)] += 1
        elif kind == "recovery":
            ms = float(e["ms"])
            recovery["all"].append(ms)
            recovery["with_endpoint" if e["with_endpoint"] else "without_endpoint"].append(ms)
            per_client[e["client_id"]].append(ms)
        elif kind == "leader_change":
            if e["new_epoch"] is None:
                unmatched_moves += 1
            else:
                topic = e["topic"] if e["topic"] is not None else e["topic_id"]
                moves.add((topic, e["partition"], e["new_epoch"], e["new_leader"]))

    loads = json.loads
    files = _input_files(root)
    for path in files:
        for line in _lines(path):
            if not line.strip():
                continue
            try:
                e = loads(line)
            except ValueError:
                rejected["malformed"] += 1
                continue
            if not isinstance(e, dict):
                rejected["malformed"] += 1
                continue
            schema, kind = e.get("schema"), e.get("type")
            if isinstance(schema, int) and schema > SCHEMA_VERSION:
                rejected["newer_schema"] += 1
                continue
            if (
                schema != SCHEMA_VERSION
                or not isinstance(kind, str)
                or "ts" not in e
                or "proxy" not in e
            ):
                rejected["malformed"] += 1
                continue
            if kind not in EVENT_TYPES:
                rejected["unknown_type"] += 1
                continue
            try:
                tally(kind, e)
            except (KeyError, TypeError, ValueError):  # a field missing or of a wrong type
                rejected["malformed"] += 1
                continue
            types[kind] += 1
    apis = sorted({api for api, _ in latency})
    return {
        "files": len(files),
        "events": sum(types.values()),
        "event_counts": dict(sorted(types.items())),
        "rejected": {k: rejected[k] for k in ("malformed", "unknown_type", "newer_schema")},
        "leader_moves": len(moves) + unmatched_moves,
        "redirects": {
            "total": sum(redirects.values()),
            **{k: redirects[k] for k in ("fast_path", "leader_only", "no_leader")},
        },
        "redirect_routes": len(routes),
        "recovery": {k: _stats(v) for k, v in sorted(recovery.items())},
        "recovery_client_p99": {str(c): _stats(v)["p99"] for c, v in per_client.items()},
        "latency": {
            api: {kind: _stats(latency[(api, kind)]) for kind in ("total", "upstream")}
            for api in apis
        },
    }


# -- comparing the job's figures with the baseline's ---------------------------------------------


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b)


def compare(summary: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """Differences between the job's summary.json and the baseline's figures."""
    pairs: list[tuple[str, Any, Any]] = [
        ("events", summary["events"], base["events"]),
        ("leader moves", summary["leader_changes"]["moves"], base["leader_moves"]),
    ]
    for kind in ("malformed", "unknown_type", "newer_schema"):
        pairs.append((f"rejected {kind}", summary["rejected"][kind], base["rejected"][kind]))
    for t, n in base["event_counts"].items():
        pairs.append((f"{t} events", summary["event_counts"].get(t), n))
    for k in ("total", "fast_path", "leader_only", "no_leader"):
        pairs.append((f"redirects {k}", summary["redirects"][k], base["redirects"][k]))
    for key in ("all", "with_endpoint", "without_endpoint"):
        job_stats = summary["recovery"].get(key) or {}
        base_stats = base["recovery"].get(key) or {}
        pairs.append((f"recovery {key} n", job_stats.get("recoveries"), base_stats.get("n")))
        for p in ("p50", "p90", "p99"):
            pairs.append((f"recovery {key} {p}", job_stats.get(p), base_stats.get(p)))
    for api, kinds in base["latency"].items():
        job_api = summary["latency"].get(api, {})
        pairs.append((f"latency {api} samples", job_api.get("samples"), kinds["total"]["n"]))
        for kind in ("total", "upstream"):
            for p in ("p50", "p90", "p99"):
                job_value = job_api.get(f"{kind}_{p}")
                pairs.append((f"latency {api} {kind} {p}", job_value, kinds[kind][p]))
    return [f"{name}: job {a!r}, baseline {b!r}" for name, a, b in pairs if not _close(a, b)]


# -- one size ----------------------------------------------------------------------------------


def ensure_data(events: int, data_root: Path) -> tuple[Path, dict[str, Any]]:
    root = data_root / f"events-{size_label(events)}"
    marker = data_root / f"events-{size_label(events)}.json"
    if marker.exists() and root.is_dir():
        return root, json.loads(marker.read_text())
    shutil.rmtree(root, ignore_errors=True)
    print(f"analytics_bench: generating {events:,} events into {root}", flush=True)
    started = time.monotonic()
    counts: dict[str, Any] = generate(FleetSpec(events=events), root)
    counts["generate_s"] = round(time.monotonic() - started, 1)
    marker.write_text(json.dumps(counts))
    return root, counts


def _load() -> str:
    """The 1, 5 and 15 minute load averages: how quiet the machine was."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def run_size(events: int, data_root: Path, master: str | None) -> dict[str, Any]:
    label = size_label(events)
    data, counts = ensure_data(events, data_root)
    work = data_root / f"run-{label}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    analysis = work / "analysis"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    argv = [sys.executable, "-m", "kproxy", "analyze", str(data), "--out", str(analysis)]
    if master:
        argv += ["--master", master]
    load_before = _load()
    print(f"analytics_bench {label}: kproxy analyze (load {load_before})", flush=True)
    spark = measured(argv, work / "analyze.log", env)
    if spark["exit_code"] != 0:
        raise SystemExit(f"kproxy analyze failed, see {work / 'analyze.log'}")
    summary = json.loads((analysis / "summary.json").read_text())
    print(f"analytics_bench {label}: plain Python baseline", flush=True)
    base_json = work / "baseline.json"
    base_argv = [sys.executable, "-m", "bench.analytics_bench", "--baseline", str(data)]
    python = measured([*base_argv, "--json", str(base_json)], work / "baseline.log")
    if python["exit_code"] != 0:
        raise SystemExit(f"baseline failed, see {work / 'baseline.log'}")
    base = json.loads(base_json.read_text())
    differences = compare(summary, base)
    parquet = sum(p.stat().st_size for p in (analysis / "events").rglob("*.parquet"))
    return {
        "size": label,
        "events": events,
        "files": counts["files"],
        "input_mb": round(counts["bytes"] / 1e6, 1),
        "generate_s": counts.get("generate_s"),
        "events_parquet_mb": round(parquet / 1e6, 1),
        "master": master or "local[*]",
        "load_before": load_before,
        "spark": spark,
        "python": python,
        "figures_agree": not differences,
        "differences": differences[:20],
        "headline": {
            "leader_moves": summary["leader_changes"]["moves"],
            "redirects": summary["redirects"]["total"],
            "endpoint_share": summary["redirects"]["endpoint_share"],
            "recoveries": (summary["recovery"]["all"] or {}).get("recoveries"),
            "recovery_p99_ms": (summary["recovery"]["all"] or {}).get("p99"),
        },
        "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


# -- results -----------------------------------------------------------------------------------


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sizes", nargs="*", type=parse_size, metavar="SIZE")
    p.add_argument("--data", type=Path, default=None, help="where generated logs are kept")
    p.add_argument("--master", default=None, help="Spark master (default: local[*])")
    p.add_argument("--baseline", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--json", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.baseline is not None:  # the measured child process of step 3
        figures = baseline(args.baseline)
        text = json.dumps(figures, indent=1)
        if args.json is not None:
            args.json.write_text(text)
        else:
            print(text)
        return 0
    sizes = args.sizes or [parse_size(s) for s in DEFAULT_SIZES]
    data_root = args.data or default_data()
    data_root.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"sizes": {}}
    if RESULTS_JSON.exists():
        results = json.loads(RESULTS_JSON.read_text())
    results["machine"] = machine()
    for events in sizes:
        r = run_size(events, data_root, args.master)
        results["sizes"][r["size"]] = r
        RESULTS_JSON.write_text(json.dumps(results, indent=1) + "\n")
        # The "From a Kafka topic" section (bench.analytics_topic_bench) stays.
        tail = RESULTS_MD.read_text().partition("<!-- analytics_topic_bench -->")
        RESULTS_MD.write_text(render_md(results) + ("\n" + tail[1] + tail[2] if tail[1] else ""))
        s, py = r["spark"], r["python"]
        print(
            f"analytics_bench {r['size']}: kproxy analyze {s['wall_s']} s, "
            f"peak {s['peak_tree_rss_mb']} MB; plain Python {py['wall_s']} s, "
            f"peak {py['peak_tree_rss_mb']} MB; figures agree: {r['figures_agree']}",
            flush=True,
        )
    print(f"analytics_bench: results in {RESULTS_MD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
