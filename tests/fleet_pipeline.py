"""The pieces of the fleet pipeline test (tests/integration/test_fleet_pipeline.py): the
cluster, kproxies and follow job it shares between its tests, the event sinks' counts,
and `kproxy analyze` run the way an operator runs it, in batch or following a topic.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from tests.analyze_command import SPARK_ENV
from tests.exposition import metrics_sum, parse_exposition
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster

TOPIC = "churned"


EVENTS_TOPIC = "kproxy-events"


PARTITIONS = 3


MOVES = 4  # leader moves of the churn


WATERMARK_SECONDS = 30


@dataclass
class Pipeline:
    kafka: KafkaCluster
    publisher: KproxyProcess  # A: file and kafka sinks
    reader: KproxyProcess  # B: what Spark reads through
    files: Path  # a copy of A's event files once both sinks had everything
    follow_out: Path
    follow_log: Path  # the first follow job's output
    follow: subprocess.Popen[bytes] | None

    @property
    def topic_uri(self) -> str:
        return f"kafka://{self.reader.bootstrap}/{EVENTS_TOPIC}"


def sink_counts(kp: KproxyProcess) -> tuple[float, float, float, float]:
    """(written by the file sink, delivered by the Kafka sink, dropped, pending)."""
    m = parse_exposition(kp.metrics_text())

    def written(sink: str) -> float:
        return sum(
            v
            for (name, labels), v in m.items()
            if name == "kproxy_events_written_total" and dict(labels)["sink"] == sink
        )

    return (
        written("file"),
        written("kafka"),
        metrics_sum(m, "kproxy_events_dropped_total"),
        metrics_sum(m, "kproxy_events_pending"),
    )


def sinks_caught_up(kp: KproxyProcess) -> bool:
    """Both sinks hold every event emitted so far. The last events (the closes of the
    clients' connections) may still be queued for the writer, in neither sink, so equal
    sink counts alone do not say so: two scrapes, each with nothing pending and the same
    counts, do (whatever was emitted before the first is counted by the second)."""
    first = sink_counts(kp)
    file, published, dropped, pending = first
    assert dropped == 0
    if pending or file != published or file == 0:
        return False
    return sink_counts(kp) == first


def start_follow(p: Pipeline, tmp: Path) -> subprocess.Popen[bytes]:
    log = open(tmp / "follow.log", "ab")  # noqa: SIM115 - the process owns it
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kproxy",
            "analyze",
            "--follow",
            p.topic_uri,
            "--out",
            str(p.follow_out),
            "--master",
            "local[2]",
            "--trigger-seconds",
            "2",
            # Every 3 triggers with data, as by default: the figures must still converge
            # once the stream has caught up, whatever the number of batches.
            "--report-every",
            "3",
            "--watermark-seconds",
            str(WATERMARK_SECONDS),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=SPARK_ENV,
        cwd=tmp,
        # A group of its own: its Spark JVM goes with it when it is killed.
        start_new_session=True,
    )


def stop_process(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM) -> None:
    """`sig` to a follow job (SIGKILL: to its whole group, the JVM too), SIGKILL to the
    group if it has not ended within a minute, and to whatever of it is left."""
    if proc is None:
        return
    if proc.poll() is None:
        if sig == signal.SIGKILL:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def rounded(value: Any) -> Any:
    """Floats to 12 significant digits, all the way down: a mean summed in another
    order (Spark's partitions of a topic are not a file's) differs in the last bit."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def table(out: Path, name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(out / "tables" / name).to_pylist()
    return list(rounded(rows))


# The whole-run tables the follow job builds with the batch job's own functions.
WHOLE_RUN_TABLES = (
    "event_counts",
    "leader_changes_by_topic",
    "leadership_by_broker",
    "redirects_by_api",
    "redirects_by_route",
    "recovery_percentiles",
    "clients",
    "topics",
)


BATCH_TABLES = (*WHOLE_RUN_TABLES, "latency_by_api", "connections")


def stored_batches(log: Path) -> int:
    """The batches with data a follow job has stored, as its output counts them (each is
    stored before the tables are rebuilt, which on a loaded machine takes minutes)."""
    return log.read_text(errors="replace").count("kproxy analyze --follow: batch ")


def follow_status(p: Pipeline) -> dict[str, Any]:
    """The follow job's status.json ({} before its first rebuild). The job replaces the
    file whole, so a read never meets a half-written one."""
    path = p.follow_out / "status.json"
    if not path.is_file():
        return {}
    status: dict[str, Any] = json.loads(path.read_text())
    return status


def rebuild_finished(log: Path, status: dict[str, Any]) -> bool:
    """Whether the rebuild that wrote `status` has logged its end. status.json is
    written a moment before that line, so a signal sent in between meets a rebuild
    still under way, which finishes and logs after the signal."""
    figures = f"({status['batches']:,} batches, {status['events']:,} events, "
    return any(
        line.startswith("kproxy analyze --follow: tables rebuilt in ") and figures in line
        for line in log.read_text(errors="replace").splitlines()
    )
