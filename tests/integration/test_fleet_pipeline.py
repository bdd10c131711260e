"""The fleet pipeline on a real Apache Kafka cluster: kproxy publishes its events to a
topic through itself, `kproxy analyze` reads the topic in batch and follows it live.

One 3-node Kafka cluster (docs/peers.md §2) for the module. kproxy "A" writes events
to files *and* to the `kproxy-events` topic, which its Kafka sink reaches through A's
own bootstrap listener (`events.kafka.bootstrap_servers: proxy`). A confluent-kafka
producer and consumer (Produce v10+/Fetch v16+: the KIP-951 path) run through A while
the test moves partition leaders. Spark reads the topic through kproxy "B" (events
off): its Kafka source (Java consumer and AdminClient) is a real client of kproxy too.

A second, single-node cluster is the events cluster of the fault test: stopped and
started while traffic flows through kproxy "C" to the first.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("matplotlib")
pytest.importorskip("pyarrow.parquet")

from kproxy.observe.events import format_ts
from tests.analyze_command import SPARK_ENV, run_analyze
from tests.churn_traffic import churn_traffic, read_event_files
from tests.fleet_pipeline import (
    BATCH_TABLES,
    EVENTS_TOPIC,
    MOVES,
    PARTITIONS,
    TOPIC,
    WATERMARK_SECONDS,
    WHOLE_RUN_TABLES,
    Pipeline,
    follow_status,
    rebuild_finished,
    rounded,
    sink_counts,
    sinks_caught_up,
    start_follow,
    stop_process,
    stored_batches,
    table,
)
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import wait_until

pytestmark = [pytest.mark.peers, pytest.mark.slow]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    tmp = tmp_path_factory.mktemp("fleet")
    with contextlib.ExitStack() as stack:
        kafka = stack.enter_context(KafkaCluster(nodes=3, heap="384m"))
        kafka.create_topic(TOPIC, PARTITIONS, 3)
        cluster = {
            "bootstrap_servers": kafka.external_bootstrap.split(","),
            "dial_overrides": kafka.dial_overrides,
        }
        (tmp / "a").mkdir()
        (tmp / "b").mkdir()
        publisher = KproxyProcess(
            tmp / "a",
            [],
            cluster=cluster,
            events={
                "sink": ["file", "kafka"],
                "request_sample_rate": 0.2,
                "kafka": {"partitions": 3},
            },
        )
        stack.enter_context(publisher)
        reader = KproxyProcess(tmp / "b", [], cluster=cluster, events={"enabled": False})
        stack.enter_context(reader)
        wait_until(
            lambda: EVENTS_TOPIC in kafka.admin().list_topics(timeout=5).topics,
            60,
            what="kproxy to create its events topic",
        )
        p = Pipeline(
            kafka, publisher, reader, tmp / "files", tmp / "follow", tmp / "follow.log", None
        )
        p.follow = start_follow(p, tmp)
        try:
            with churn_traffic(publisher.bootstrap, TOPIC, PARTITIONS, "fleet"):
                kafka.rotate_leaders(TOPIC, MOVES)

            wait_until(
                lambda: sinks_caught_up(publisher),
                60,
                what="the Kafka sink to deliver what the file sink wrote",
            )
            shutil.copytree(publisher.tmp / "events", p.files)
            yield p
        finally:
            stop_process(p.follow)


def test_the_topic_gives_exactly_the_figures_of_the_files(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    events = read_event_files(pipeline.files)
    by_type = Counter(e["type"] for e in events)
    assert by_type["leader_change"] >= MOVES, by_type
    assert by_type["redirect"] > 0, "the churn made no client follow a new leader"
    # kproxy's own events producer is not a client in its own figures; the topic it
    # creates is a change to the cluster, in the audit trail like any other.
    own = [e for e in events if str(e.get("client_id") or "").startswith("kproxy-events-")]
    assert [(e["type"], e["api"]) for e in own if e["type"] == "audit"] in (
        [],
        [("audit", "CreateTopics")],
    )
    assert [e for e in own if e["type"] != "audit"] == []

    _, from_files = run_analyze([str(pipeline.files)], tmp_path / "files")
    _, from_topic = run_analyze([pipeline.topic_uri], tmp_path / "topic")
    assert from_files["events"] == len(events)
    for key in ("inputs", "out", "report"):
        from_files.pop(key, None)
        from_topic.pop(key, None)
    assert rounded(from_topic) == rounded(from_files)
    for name in BATCH_TABLES:
        assert table(tmp_path / "topic", name) == table(tmp_path / "files", name), name


def test_a_topic_the_cluster_does_not_have_is_one_line_and_exit_2(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    uri = f"kafka://{pipeline.reader.bootstrap}/no-such-topic"
    result = subprocess.run(
        [sys.executable, "-m", "kproxy", "analyze", uri, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        env=SPARK_ENV,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert f"kproxy analyze: no such topic: {uri}\n" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "out").exists()


def test_follow_converges_restarts_without_double_counting_and_counts_late_events(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    p = pipeline

    def counts() -> dict[str, int]:
        tables = follow_status(p).get("tables", {})
        return {r["type"]: r["events"] for r in tables.get("event_counts", [])}

    def converged() -> dict[str, int] | None:
        # The event log writes its files on a clock (kproxy.observe.events.DRAIN_SECONDS) and
        # the proxy may still be logging (a connection closing): the files are read again
        # at each look, and the job has caught up when it counts what they hold.
        seen = counts()
        files = Counter(e["type"] for e in read_event_files(p.publisher.tmp / "events"))
        return seen if seen and seen == dict(files) else None

    # Converges while it runs (it started before the churn).
    wait_until(converged, 300, what="the follow job to catch up", interval=1)

    # Killed hard in the middle of work (new events keep arriving), restarted from its
    # checkpoint: every event counted once.
    assert p.follow is not None
    stored = stored_batches(p.follow_log)
    with churn_traffic(p.publisher.bootstrap, TOPIC, PARTITIONS, "fleet-2"):
        wait_until(
            lambda: stored_batches(p.follow_log) > stored, 120, what="a batch after the churn"
        )
        stop_process(p.follow, signal.SIGKILL)
        p.kafka.rotate_leaders(TOPIC, 1)
    p.follow = start_follow(p, tmp_path)
    wait_until(
        lambda: sinks_caught_up(p.publisher), 60, what="the Kafka sink to deliver everything"
    )
    # Its first batch is the backlog; the tables are rebuilt after it and again once it
    # has caught up (minutes each on a loaded 2-core machine).
    wait_until(converged, 480, what="the restarted job to catch up", interval=1)

    # The same figures as a batch run over the same events.
    batch_out = tmp_path / "batch"
    run_analyze([p.topic_uri], batch_out)
    for name in WHOLE_RUN_TABLES:
        assert table(p.follow_out, name) == table(batch_out, name), name
    per_window = table(p.follow_out, "leader_changes_per_window")
    assert sum(r["moves"] for r in per_window) == sum(
        r["moves"] for r in table(batch_out, "leader_changes_by_topic")
    )

    # An event older than the watermark: counted as late, in no window.
    up_to = datetime.datetime.fromisoformat(follow_status(p)["data_up_to"])
    old = format_ts(up_to.timestamp() - 3 * WATERMARK_SECONDS)
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": p.reader.bootstrap})
    late = {
        "schema": 1,
        "type": "leader_change",
        "ts": old,
        "proxy": "elsewhere-1",
        "topic": "late-topic",
        "topic_id": None,
        "partition": 0,
        "old_leader": 1,
        "new_leader": 2,
        "old_epoch": 1,
        "new_epoch": 2,
        "source_api": "Metadata",
    }
    producer.produce(EVENTS_TOPIC, json.dumps(late).encode(), b"late-topic-0")
    assert producer.flush(30) == 0
    wait_until(lambda: follow_status(p).get("late") == 1, 300, what="the late event counted")
    follow_log = tmp_path / "follow.log"
    wait_until(
        lambda: rebuild_finished(follow_log, follow_status(p)), 30, what="that rebuild's end"
    )
    late_rows = follow_status(p)["tables"]["late_events"]
    assert [(r["type"], r["events"]) for r in late_rows] == [("leader_change", 1)]
    topics = {r["topic"] for r in table(p.follow_out, "leader_changes_per_window")}
    assert "late-topic" not in topics
    assert (p.follow_out / "report.html").read_text().count("data up to") == 1

    # SIGTERM stops it cleanly, and with its tables current (no event since the late
    # one) it rebuilds nothing more.
    stop_process(p.follow)
    assert p.follow.returncode == 0
    log = follow_log.read_text(errors="replace")
    before, stopping, after = log.partition("kproxy analyze --follow: signal 15, stopping")
    assert stopping and "tables rebuilt in" in before
    assert "tables rebuilt in" not in after


def produce_and_consume(
    bootstrap: str, topic: str, count: int, group: str, expect: int
) -> list[bytes]:
    """`count` records produced, then the topic read from the start by a new group until
    `expect` records came back, all through kproxy; the values read."""
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, b"%d" % i)
    assert producer.flush(60) == 0
    del producer
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < expect and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        value = msg.value() if msg is not None and msg.error() is None else None
        if value is not None:
            got.append(value)
    consumer.close()
    return got


def test_a_dead_events_cluster_costs_the_proxy_nothing_and_publishing_resumes(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    kafka = pipeline.kafka
    kafka.create_topic("fault-data", 1, 3)
    with KafkaCluster(nodes=1, heap="256m") as events_cluster:
        kp = KproxyProcess(
            tmp_path,
            [],
            cluster={
                "bootstrap_servers": kafka.external_bootstrap.split(","),
                "dial_overrides": kafka.dial_overrides,
            },
            events={
                "sink": "kafka",
                "queue_size": 100,
                "kafka": {
                    "bootstrap_servers": events_cluster.internal_bootstrap,
                    "partitions": 1,
                    "message_timeout_seconds": 2,
                },
            },
        )
        with kp:
            wait_until(lambda: sink_counts(kp)[1] > 0, 60, what="the first events published")
            events_cluster.stop_node(1)
            # Traffic through kproxy while its events cannot be published: exact.
            values = [b"%d" % i for i in range(500)]
            got = produce_and_consume(kp.bootstrap, "fault-data", 500, "f1", 500)
            assert sorted(got) == sorted(values)
            wait_until(lambda: sink_counts(kp)[2] > 0, 60, what="undeliverable events counted")
            assert "cannot publish to Kafka topic kproxy-events" in kp.log()
            assert kp.log().count("cannot publish to Kafka topic") == 1  # said once

            events_cluster.start_node(1, in_sync=False)
            published = sink_counts(kp)[1]
            got = produce_and_consume(kp.bootstrap, "fault-data", 500, "f2", 1000)
            assert sorted(got) == sorted(values * 2)  # both runs' records, read again
            wait_until(lambda: sink_counts(kp)[1] > published, 120, what="publishing again")
            assert "publishing to Kafka topic kproxy-events again" in kp.log()
            file, delivered, dropped, _ = sink_counts(kp)
            assert file == 0 and dropped > 0 and delivered > published
