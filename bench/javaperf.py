"""Kafka's own load generators (kafka-producer-perf-test, kafka-consumer-perf-test),
run from the Apache Kafka jars that ``tests/peers/kafka_install.py`` fetches."""

from __future__ import annotations

import re
from typing import Any

from tests.peers.kafka_install import MAIN_CONSUMER_PERF, MAIN_PRODUCER_PERF, run_java_tool

_HEAP = "512m"

_PRODUCER_LINE = re.compile(
    r"(?P<records>\d+) records sent, (?P<rps>[\d.]+) records/sec \((?P<mibps>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99.9th"
)


class ToolFailed(RuntimeError):
    """A perf tool ran but printed no result line."""


def parse_producer_perf(stdout: str, record_size: int) -> dict[str, Any]:
    """The final summary line of ProducerPerformance."""
    matches = list(_PRODUCER_LINE.finditer(stdout))
    if not matches:
        raise ToolFailed(f"no summary line in producer perf output: {stdout[-300:]!r}")
    m = matches[-1]
    rps = float(m["rps"])
    return {
        "messages": int(m["records"]),
        "bytes": int(m["records"]) * record_size,
        "msg_per_s": rps,
        "mb_per_s": rps * record_size / 1e6,
        "avg_latency_ms": float(m["avg"]),
        "p50_ms": float(m["p50"]),
        "p99_ms": float(m["p99"]),
        "p999_ms": float(m["p999"]),
    }


def parse_consumer_perf(stdout: str, record_size: int) -> dict[str, Any]:
    """ConsumerPerformance's CSV line. Throughput is its ``fetch.*`` rate, which leaves
    out the group join (Tansu holds JoinGroup for half the session timeout)."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if line.startswith("start.time") and i + 1 < len(lines):
            header = [h.strip() for h in line.split(",")]
            values = [v.strip() for v in lines[i + 1].split(",")]
            row = dict(zip(header, values, strict=False))
            msgs = int(float(row["data.consumed.in.nMsg"]))
            rate = float(row["fetch.nMsg.sec"])
            return {
                "messages": msgs,
                "bytes": msgs * record_size,
                "msg_per_s": rate,
                "mb_per_s": rate * record_size / 1e6,
                "rebalance_ms": float(row["rebalance.time.ms"]),
                "fetch_ms": float(row["fetch.time.ms"]),
            }
    raise ToolFailed(f"no result line in consumer perf output: {stdout[-300:]!r}")


def producer_perf(
    bootstrap: str, topic: str, count: int, size: int, *, timeout: float = 300
) -> dict[str, Any]:
    """kafka-producer-perf-test with the Java client's defaults and acks=all."""
    run = run_java_tool(
        MAIN_PRODUCER_PERF,
        "--topic", topic, "--num-records", str(count), "--record-size", str(size),
        "--throughput", "-1", "--bootstrap-server", bootstrap,
        "--command-property", "acks=all",
        heap=_HEAP, timeout=timeout,
    )  # fmt: skip
    return parse_producer_perf(run.stdout, size)


def consumer_perf(
    bootstrap: str,
    topic: str,
    count: int,
    size: int,
    group: str,
    *,
    session_timeout_ms: int = 6000,
    timeout: float = 300,
) -> dict[str, Any]:
    """kafka-consumer-perf-test from the beginning of ``topic`` in a fresh group."""
    heartbeat = max(100, session_timeout_ms // 4)
    run = run_java_tool(
        MAIN_CONSUMER_PERF,
        "--topic", topic, "--num-records", str(count), "--bootstrap-server", bootstrap,
        "--timeout", "60000", "--group", group,
        "--command-property", f"session.timeout.ms={session_timeout_ms}",
        "--command-property", f"heartbeat.interval.ms={heartbeat}",
        heap=_HEAP, timeout=timeout,
    )  # fmt: skip
    return parse_consumer_perf(run.stdout, size)
