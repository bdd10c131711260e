"""Fetch responses streamed through kproxy to the Java client, KIP-951 tail included.

Two real Apache Kafka brokers advertise `broker-N.kafka.invalid`, longer than kproxy's
`127.0.0.1`. The Java consumer (`tests/java/ConsumeThroughLeaderMove.java`, Kafka's own
client at Fetch v17+) is about to read a backlog in partition 0 and partition 1 from the
same leader through kproxy when the Java AdminClient moves partition 1's leader to the
other broker. The old leader's Fetch response carries 1 MiB of partition 0's records and
then partition 1's redirect, with the new leader in the tagged `NodeEndpoints` after the
records. kproxy streams it and rewrites the tail at the length it announced,
padded with a tagged field the client must skip (KIP-482). The Java client reads every
record in order, follows the new leader, and never sees a broker's own address.

It runs on the Kafka 4 releases tested, each with its own Java client: the one every other
real-Kafka test runs and the newest (``KAFKA_4_RELEASES``). Not on 3.9.2: its Java client
does not always send its first Fetch after the move to the old leader for both
partitions, and the redirect then comes in a small response of its own (rewritten, not
streamed), which this test is not about.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster

pytestmark = [pytest.mark.peers, pytest.mark.slow]

TOPIC = "streamed-java"
BACKLOG = 3_000  # 1 KiB records in partition 0, three Fetch responses' worth
MOVED = 200  # records in partition 1, half written after its leader moves
PROGRAM = Path(__file__).resolve().parents[1] / "java" / "ConsumeThroughLeaderMove.java"


@pytest.fixture(scope="module")
def kafka(kafka_4_pair: KafkaCluster) -> KafkaCluster:
    kafka_4_pair.create_topic(TOPIC, 2, 2)
    return kafka_4_pair


def test_the_java_consumer_reads_a_streamed_response_whose_redirect_was_padded(
    kafka: KafkaCluster, tmp_path: Path
) -> None:
    from confluent_kafka import Producer

    with KproxyProcess(
        tmp_path,
        kafka.external_real_bootstrap.split(","),
        cluster={"dial_overrides": kafka.dial_overrides},
        # The default (64 KiB): the redirect comes behind 1 MiB of records.
        limits={"stream_responses_after_bytes": 65536},
    ) as kp:
        producer = Producer({"bootstrap.servers": kp.bootstrap, "linger.ms": 20})
        for i in range(BACKLOG):
            producer.produce(TOPIC, b"%d:" % i + b"x" * 1000, partition=0)
            producer.poll(0)
        for i in range(MOVED // 2):
            producer.produce(TOPIC, b"%d" % i, partition=1)
        assert producer.flush(60) == 0
        del producer
        # Both partitions on one leader, and every broker agreeing, before the Java client
        # starts: a client bootstrapped from a broker whose metadata still lags a move
        # first asks the old leader for partition 1 alone, and the redirect then does not
        # come behind the backlog.
        leaders = kafka.leaders(TOPIC)
        if leaders[1] != leaders[0]:
            others = [r for r in kafka.replicas(TOPIC)[1] if r != leaders[0]]
            kafka.reassign(TOPIC, 1, [leaders[0], *others])
            kafka.elect_preferred_leaders(TOPIC, [1])

        run = kafka.java_client(
            str(PROGRAM), kp.bootstrap, TOPIC, str(BACKLOG), str(MOVED),
            timeout=240, check=False,
        )  # fmt: skip
        out = f"{run.stdout}\n{run.stderr}"
        assert run.returncode == 0, out[-4000:]
        assert "partition 1 moved from" in run.stdout, out[-4000:]
        assert f"read {BACKLOG} and {MOVED} records" in run.stdout, out[-4000:]
        assert ".invalid" not in out, "the Java client saw a broker's own address"

        streamed = {
            tail: kp.metric("kproxy_responses_streamed_total", api="Fetch", tail=tail)
            for tail in ("none", "padded", "rewritten", "dropped")
        }
        assert streamed["none"] > 0, streamed  # the backlog's responses streamed
        assert streamed["padded"] >= 1, streamed  # and the redirect's, padded
        assert streamed["dropped"] == 0, streamed
