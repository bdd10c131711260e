"""Fetch responses streamed through kproxy to a real client, KIP-951 tail included.

librdkafka's mock cluster (brokers advertised as `broker-N.cluster.invalid`, longer than
kproxy's `127.0.0.1`) holds a large backlog in partition 0 while a confluent-kafka
consumer (Fetch v16+) reads partitions 0 and 1 from broker 1 through kproxy. Partition 1's
leader moves to broker 2 mid-read: broker 1's next Fetch response carries hundreds of KiB
of partition 0's records and, after them, partition 1's NOT_LEADER_OR_FOLLOWER with the
new leader in `NodeEndpoints`. kproxy forwards it while it arrives and rewrites the tail at
the length it announced, padded with a tagged field the client must skip (KIP-482): the
client reads every record of both partitions, follows the new leader, and never sees a
broker's own address.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kproxy_process import KproxyProcess
from tests.leak_check import LogLines, assert_no_leak
from tests.peers.mock_cluster import MockCluster
from tests.peers.net import wait_until

pytestmark = pytest.mark.peers

TOPIC = "backlog"
# 1 KiB records in partition 0 (the mock keeps only a few MB of a partition's log)
BACKLOG = 4_000
MOVED = 300  # records in partition 1, half before its leader moves
VALUE = b"x" * 1000


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    from confluent_kafka import Producer

    with MockCluster(brokers=3) as mc:
        mc.create_topic(TOPIC, 2, 3)
        mc.set_leader(TOPIC, 0, 1)
        mc.set_leader(TOPIC, 1, 1)
        # Loaded directly, before the brokers advertise names only kproxy can dial.
        producer = Producer({"bootstrap.servers": mc.bootstraps, "linger.ms": 20})
        for i in range(BACKLOG):
            producer.produce(TOPIC, b"%d:" % i + VALUE, partition=0)
            producer.poll(0)
        for i in range(MOVED // 2):
            producer.produce(TOPIC, b"%d" % i, partition=1)
        assert producer.flush(60) == 0
        del producer  # it would keep dialling the brokers' real ports
        yield mc


def test_a_streamed_fetch_response_with_a_kip951_redirect_reaches_a_real_client(
    cluster: MockCluster, tmp_path: Path
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    overrides = cluster.advertise_invalid_names("cluster.invalid")
    with KproxyProcess(
        tmp_path, cluster.bootstraps.split(","), cluster={"dial_overrides": overrides}
    ) as kp:
        # Broker 1 answers each Fetch 300 ms late, so the backlog (about four responses) is
        # still coming when partition 1 moves after the first records: a Fetch broker 1
        # answers after the move carries records and the redirect. Without the delay the
        # whole backlog could arrive before the move, and the redirect would then come alone
        # in a small response, gathered rather than streamed.
        cluster.set_rtt(1, 300)
        log = LogLines("streamed-consumer")
        consumer = Consumer(
            {
                "bootstrap.servers": kp.bootstrap,
                "group.id": "streamed",
                "enable.auto.commit": False,
                # A short prefetch queue: the consumer keeps asking broker 1 for partition
                # 0 while partition 1 moves, so the redirect comes behind records.
                "queued.max.messages.kbytes": 2048,
                "max.partition.fetch.bytes": 524288,
                "debug": "broker,fetch,metadata",
                "logger": log.logger,
            }
        )
        consumer.assign([TopicPartition(TOPIC, 0, 0), TopicPartition(TOPIC, 1, 0)])
        seen: dict[int, list[bytes]] = {0: [], 1: []}
        moved = False
        try:

            def read_all() -> bool:
                nonlocal moved
                for m in consumer.consume(500, 0.5):
                    assert m.error() is None, m.error()
                    seen[m.partition()].append(m.value())
                if not moved and seen[0]:
                    moved = True
                    cluster.set_leader(TOPIC, 1, 2)
                    more = Producer({"bootstrap.servers": kp.bootstrap})
                    for i in range(MOVED // 2, MOVED):
                        more.produce(TOPIC, b"%d" % i, partition=1)
                    assert more.flush(30) == 0
                return len(seen[0]) >= BACKLOG and len(seen[1]) >= MOVED

            wait_until(read_all, 180, interval=0, what="every record of both partitions")
        finally:
            consumer.close()

        assert seen[0] == [b"%d:" % i + VALUE for i in range(BACKLOG)]
        assert seen[1] == [b"%d" % i for i in range(MOVED)]
        streamed = {
            tail: kp.metric("kproxy_responses_streamed_total", api="Fetch", tail=tail)
            for tail in ("none", "padded", "rewritten", "dropped")
        }
        assert streamed["none"] > 0, streamed  # the backlog's responses streamed
        assert streamed["padded"] >= 1, streamed  # and the redirect's, padded
        assert "Protocol parse failure" not in "\n".join(log.lines)
        assert_no_leak([log], kp)
