"""`kproxy analyze` reading an events topic, in batch and following it:

    python -m bench.analytics_topic_bench [SIZE ...] [--data DIR]

For each SIZE (default 1M 5M 20M) the synthetic fleet log of bench/analytics_gen.py
(the same files `bench.analytics_bench` reads) is loaded into the topic `kproxy-events`
(6 partitions) of a single-node Apache Kafka (tests/peers, heap 1 GB) with kcat, one
line a record (unkeyed: no figure depends on the key). Then, on `local[2]`:

1. batch: `kproxy analyze kafka://BOOTSTRAP/kproxy-events --out DIR`, wall time and the
   peak memory of its process tree; its summary is checked against the plain Python
   reading of the files (`bench.analytics_bench --baseline`): the figures must agree;
2. streaming: `kproxy analyze --follow kafka://...` from the earliest offset, with
   `maxOffsetsPerTrigger` 250k and the default trigger (10 s) and report cadence (every 3
   triggers with data): the events per second it sustains (status.json, from its
   first report to the report that counts the last record, tables rebuilt included).

Results go to `bench/analytics_topic_results.json` and to the "From a Kafka topic"
section of `bench/ANALYTICS_RESULTS.md`. Not a test: nothing asserts a time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.analytics_baseline import compare
from bench.analytics_bench import (
    RESULTS_MD,
    _load,
    default_data,
    ensure_data,
    measured,
    parse_size,
    size_label,
)
from tests.analyze_command import SPARK_ENV
from tests.peers.kafka_cluster import KafkaCluster

REPO = Path(__file__).resolve().parent.parent
RESULTS_JSON = REPO / "bench" / "analytics_topic_results.json"
MARKER = "<!-- analytics_topic_bench -->"
TOPIC = "kproxy-events"


def load_topic(kafka: KafkaCluster, data: Path) -> float:
    """Every line of every file as one record (kcat reads stdin line by line); seconds
    taken."""
    kafka.create_topic(TOPIC, 6, 1)
    files = sorted(str(p) for p in data.rglob("events-*.jsonl"))
    started = time.monotonic()
    kcat = ["kcat", "-P", "-b", kafka.internal_bootstrap, "-t", TOPIC, "-z", "lz4"]
    tuning = ["-X", "linger.ms=50", "-X", "batch.num.messages=10000"]
    with subprocess.Popen([*kcat, *tuning], stdin=subprocess.PIPE) as proc:
        assert proc.stdin is not None
        for name in files:
            with open(name, "rb") as f:
                shutil.copyfileobj(f, proc.stdin, 1 << 20)
        proc.stdin.close()
    if proc.returncode != 0:
        raise SystemExit(f"kcat failed ({proc.returncode})")
    return time.monotonic() - started


def follow_rate(uri: str, work: Path, events: int) -> dict[str, Any]:
    out = work / "follow"
    argv = [sys.executable, "-m", "kproxy", "analyze", "--follow", uri, "--out", str(out)]
    argv += ["--master", "local[2]", "--kafka-option", "maxOffsetsPerTrigger=250000"]
    status = out / "status.json"
    with open(work / "follow.log", "wb") as log:
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=SPARK_ENV, cwd=REPO)
        first: float | None = None
        lines = 0
        try:
            while lines < events and proc.poll() is None:
                time.sleep(1)
                if status.exists():
                    try:
                        lines = int(json.loads(status.read_text())["lines"])
                    except (ValueError, KeyError):
                        continue
                    if first is None:
                        first = time.monotonic()
                        first_lines = lines
        finally:
            done = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(120)
    if first is None or lines < events:
        raise SystemExit(f"the follow job did not finish, see {work / 'follow.log'}")
    return {
        "to_first_report_s": round(first - started, 1),
        "to_all_counted_s": round(done - started, 1),
        "events_per_s": round((lines - first_lines) / max(done - first, 1e-9)),
    }


def run_size(events: int, data_root: Path) -> dict[str, Any]:
    label = size_label(events)
    data, counts = ensure_data(events, data_root)
    work = data_root / f"topic-run-{label}"
    subprocess.run(["rm", "-rf", str(work)], check=True)
    work.mkdir(parents=True)
    with KafkaCluster(nodes=1, heap="1g") as kafka:
        load_s = load_topic(kafka, data)
        uri = f"kafka://{kafka.internal_bootstrap}/{TOPIC}"
        load_before = _load()
        out = work / "analysis"
        print(f"analytics_topic_bench {label}: batch (load {load_before})", flush=True)
        argv = [sys.executable, "-m", "kproxy", "analyze", uri, "--out", str(out)]
        batch = measured([*argv, "--master", "local[2]"], work / "analyze.log", SPARK_ENV)
        if batch["exit_code"] != 0:
            raise SystemExit(f"kproxy analyze failed, see {work / 'analyze.log'}")
        summary = json.loads((out / "summary.json").read_text())
        base_json = work / "baseline.json"
        base_argv = [sys.executable, "-m", "bench.analytics_bench", "--baseline", str(data)]
        measured([*base_argv, "--json", str(base_json)], work / "baseline.log")
        differences = compare(summary, json.loads(base_json.read_text()))
        print(f"analytics_topic_bench {label}: streaming", flush=True)
        stream = follow_rate(uri, work, counts.get("lines", events))
    batch.pop("rss_samples", None)
    return {
        "size": label,
        "events": events,
        "input_mb": round(counts["bytes"] / 1e6, 1),
        "load_topic_s": round(load_s, 1),
        "load_before": load_before,
        "batch": batch,
        "figures_agree": not differences,
        "differences": differences[:20],
        "stream": stream,
        "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def render(results: dict[str, Any]) -> str:
    rows = [
        f"| {r['size']} | {r['input_mb']:,.0f} MB | {r['load_topic_s']:.0f} s "
        f"| {r['batch']['wall_s']:.0f} s | {r['batch']['peak_tree_rss_mb']:,.0f} MB "
        f"| {'yes' if r['figures_agree'] else 'NO'} | {r['stream']['events_per_s']:,} "
        f"| {r['stream']['to_all_counted_s']:.0f} s | {r['load_before']} |"
        for r in sorted(results.values(), key=lambda r: r["events"])
    ]
    return "\n".join(
        [
            MARKER,
            "## From a Kafka topic",
            "",
            "Written by `python -m bench.analytics_topic_bench` (raw figures in",
            "`bench/analytics_topic_results.json`): the same synthetic logs, loaded into a",
            "6-partition topic of a single-node Apache Kafka, read by `kproxy analyze",
            "kafka://...` (batch, `local[2]`) and followed by `kproxy analyze --follow`",
            "(`local[2]`, `maxOffsetsPerTrigger` 250k, trigger 10 s, tables and report every 3",
            "triggers). *agree*: the batch summary equals the plain Python reading of the",
            "files. *stream events/s*: records counted per second from the first report",
            "to the last record; *all counted*: from the job's start.",
            "",
            "| events | input | load topic | batch wall | batch peak RSS (tree) | agree "
            "| stream events/s | all counted | load before |",
            "|---:|---:|---:|---:|---:|:---:|---:|---:|---|",
            *rows,
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.analytics_topic_bench")
    p.add_argument("sizes", nargs="*", default=["1M", "5M", "20M"])
    p.add_argument("--data", type=Path, default=None)
    args = p.parse_args(argv)
    data_root = args.data or default_data()
    results = json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.exists() else {}
    for text in args.sizes:
        row = run_size(parse_size(text), data_root)
        results[row["size"]] = row
        RESULTS_JSON.write_text(json.dumps(results, indent=1) + "\n")
        md = RESULTS_MD.read_text()
        head = md.split(MARKER)[0].rstrip("\n")
        RESULTS_MD.write_text(head + "\n\n" + render(results))
        print(json.dumps({k: row[k] for k in ("size", "batch", "stream")}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
