"""Share groups (KIP-932) through kproxy: real Apache Kafka, two real share consumers.

Two KRaft brokers advertise `broker-N.kafka.invalid`; only kproxy can dial them. A share
consumer reads a topic's two partitions through kproxy, acknowledging every record one
by one (`share.acknowledgement.mode=explicit`): its ShareFetch and ShareAcknowledge go to
the leaders kproxy advertises. Once it has the first half, both partitions' leaders move
(a reassignment, then a preferred-leader election) and the second half is written. The
consumer's next ShareFetch to an old leader is answered NOT_LEADER_OR_FOLLOWER with the
partition's `CurrentLeader` and the new leader in the response's `NodeEndpoints`
(ShareFetch v1+), which kproxy rewrites to its own address for that node. The consumer
reads every record from the new leaders, and no client ever sees a broker's own address.

The consumers: librdkafka's `ShareConsumer` (confluent-kafka) and Kafka's own
`KafkaShareConsumer` (`tests/java/ShareConsumeAll.java`), on the release every other
real-Kafka test runs and on the newest (share groups came in 4.x; 4.4 has
`share.version=2` by default). At DEBUG the Java client logs every response it decoded:
that log shows, in the client's own words, the endpoints it was told. The shapes no
broker sends on demand (a node kproxy cannot map, every ShareFetch and ShareAcknowledge
version) are `tests/integration/kraft_share/`'s, against a scripted broker.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kproxy_process import KproxyProcess
from tests.leak_check import LogLines, assert_no_leak
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.kafka_install import java_env, java_tool_argv
from tests.peers.net import wait_until
from tests.peers.procs import PeerProcess

pytestmark = [pytest.mark.peers, pytest.mark.slow]

HALF = 300  # records written before the leaders move, and as many after
PROGRAM = Path(__file__).resolve().parents[1] / "java" / "ShareConsumeAll.java"


@pytest.fixture(scope="module")
def kafka(kafka_4_pair: KafkaCluster) -> KafkaCluster:
    return kafka_4_pair


@pytest.fixture(scope="module")
def kproxy(
    kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    with KproxyProcess(
        tmp_path_factory.mktemp("kproxy"),
        kafka.external_real_bootstrap.split(","),
        cluster={"dial_overrides": kafka.dial_overrides},
    ) as kp:
        yield kp


def prepare(kafka: KafkaCluster, topic: str, group: str) -> None:
    """The topic, and the group reading it from its start (a share group starts at the
    latest offset by default: `share.auto.offset.reset`, a group config, KIP-932)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    kafka.create_topic(topic, 2, 2)
    earliest = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[earliest])
    for future in kafka.admin().incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def produce(kp: KproxyProcess, topic: str, values: range) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kp.bootstrap, "linger.ms": 5, "acks": "all"})
    for i in values:
        producer.produce(topic, b"%d" % i, partition=i % 2)
    assert producer.flush(60) == 0


def move_both_leaders(kafka: KafkaCluster, topic: str) -> None:
    before = kafka.leaders(topic)
    kafka.rotate_leaders(topic, 2)
    after = kafka.leaders(topic)
    assert all(after[p] != before[p] for p in before), (before, after)


def share_fetch_redirects(kp: KproxyProcess) -> tuple[float, float]:
    """ShareFetch redirects that named the new leader (every from and to node), and
    ShareFetch endpoints rewritten."""
    return (
        kp.metric("kproxy_redirects_total", api="ShareFetch"),
        kp.metric("kproxy_endpoint_rewrites_total", api="ShareFetch"),
    )


def assert_share_fetch_redirected(kp: KproxyProcess, before: tuple[float, float]) -> None:
    redirects, rewrites = share_fetch_redirects(kp)
    assert redirects > before[0], "no ShareFetch named a moved partition's new leader"
    assert rewrites > before[1], "no ShareFetch NodeEndpoints was rewritten"


def test_librdkafka_share_consumer_follows_moved_leaders_through_kproxy(
    kafka: KafkaCluster, kproxy: KproxyProcess
) -> None:
    from confluent_kafka import ShareConsumer

    topic, group = "shared-librdkafka", "share-librdkafka"
    prepare(kafka, topic, group)
    produce(kproxy, topic, range(HALF))
    before = share_fetch_redirects(kproxy)

    log = LogLines("share-consumer")
    consumer = ShareConsumer(
        {
            "bootstrap.servers": kproxy.bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
            "debug": "broker,fetch",
            "logger": log.logger,
        }
    )
    seen: list[int] = []
    try:
        consumer.subscribe([topic])
        moved = False
        deadline = time.monotonic() + 120
        while len(set(seen)) < 2 * HALF:
            assert time.monotonic() < deadline, f"read {len(set(seen))} of {2 * HALF}"
            batch = consumer.poll(1.0)
            for message in batch:
                assert message.error() is None, message.error()
                seen.append(int(message.value()))
                consumer.acknowledge(message)
            if batch:
                consumer.commit_sync()
            if not moved and len(set(seen)) >= HALF:
                moved = True
                move_both_leaders(kafka, topic)
                produce(kproxy, topic, range(HALF, 2 * HALF))
    finally:
        consumer.close()

    assert sorted(set(seen)) == list(range(2 * HALF))
    assert_no_leak([log], kproxy)
    assert_share_fetch_redirected(kproxy, before)
    assert kproxy.metric("kproxy_endpoints_unmapped_total", api="ShareFetch") == 0
    for api in ("ShareFetch", "ShareAcknowledge"):
        assert kproxy.metric("kproxy_frames_total", api=api, direction="response") > 0, api


def test_kafka_share_consumer_follows_moved_leaders_through_kproxy(
    kafka: KafkaCluster, kproxy: KproxyProcess, tmp_path: Path
) -> None:
    topic, group = "shared-java", "share-java"
    prepare(kafka, topic, group)
    produce(kproxy, topic, range(HALF))
    before = share_fetch_redirects(kproxy)

    argv = java_tool_argv(
        str(PROGRAM),
        kproxy.bootstrap,
        topic,
        group,
        str(2 * HALF),
        lib=kafka.lib,
        log_level="debug",
    )
    out = tmp_path / "share-consumer.log"

    def have() -> int:
        counts = re.findall(r"^have (\d+)$", out.read_text(errors="replace"), re.M)
        return max(map(int, counts), default=0)

    with PeerProcess("java-share-consumer", argv, log_path=out, env=java_env()) as java:
        wait_until(lambda: have() >= HALF, 120, 0.1, "the Java share consumer's first half")
        move_both_leaders(kafka, topic)
        produce(kproxy, topic, range(HALF, 2 * HALF))
        wait_until(lambda: not java.running, 120, 0.1, "the Java share consumer to finish")
        text = out.read_text(errors="replace")
        assert java.returncode == 0, text[-4000:]

    assert f"read {2 * HALF} records in" in text, text[-4000:]
    assert "acknowledgement of" not in text, text[-4000:]
    # At DEBUG the client logs every response it decoded: what it was told, in its words.
    assert ".invalid" not in text, "the Java client saw a broker's own address"
    told = re.findall(
        r"Received SHARE_FETCH response .*nodeEndpoints=\[NodeEndpoint\(nodeId=\d+, "
        r"host='127\.0\.0\.1', port=(\d+)",
        text,
    )
    assert told, "no ShareFetch response named a new leader to the Java client"
    assert {int(port) for port in told} <= set(kproxy.listener_ports().values()), told
    assert_share_fetch_redirected(kproxy, before)
