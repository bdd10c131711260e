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
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.analytics_baseline import baseline, compare
from bench.analytics_gen import FleetSpec, generate
from bench.analytics_render import machine, render_md

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
