"""The Java client through kproxy, by Kafka's own perf tools: records written, records
read back by count (their payloads are the tool's own)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.kafka_install import MAIN_CONSUMER_PERF, MAIN_PRODUCER_PERF


def java_produce(
    kafka: KafkaCluster,
    bootstrap: str,
    topic: str,
    count: int,
    properties: Path,
    jvm_args: tuple[str, ...] = (),
) -> None:
    """`count` records of 100 bytes with acks=all; fails unless every one was sent and the
    client never saw a broker's own (.invalid) name."""
    result = kafka.java_tool(
        MAIN_PRODUCER_PERF,
        "--topic", topic,
        "--num-records", str(count),
        "--record-size", "100",
        "--throughput", "-1",
        "--bootstrap-server", bootstrap,
        "--command-config", str(properties),
        "--command-property", "acks=all",
        timeout=180,
        check=False,
        jvm_args=jvm_args,
    )  # fmt: skip
    out = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, out
    assert f"{count} records sent" in result.stdout, out
    assert ".invalid" not in out, "the Java producer saw a broker's own name"


def java_consume_count(
    kafka: KafkaCluster,
    bootstrap: str,
    topic: str,
    count: int,
    properties: Path | None = None,
    jvm_args: tuple[str, ...] = (),
) -> int:
    """How many records the Java consumer read, waiting for `count` (60 s at most)."""
    config = ["--command-config", str(properties)] if properties is not None else []
    result = kafka.java_tool(
        MAIN_CONSUMER_PERF,
        "--topic", topic,
        "--messages", str(count),
        "--bootstrap-server", bootstrap,
        *config,
        "--timeout", "60000",
        timeout=180,
        check=False,
        jvm_args=jvm_args,
    )  # fmt: skip
    out = f"{result.stdout}\n{result.stderr}"
    assert result.returncode == 0, out
    assert ".invalid" not in out, "the Java consumer saw a broker's own name"
    rows = [line for line in result.stdout.splitlines() if re.match(r"^\d{4}-", line)]
    assert rows, out
    return int(rows[-1].split(",")[4].strip())
