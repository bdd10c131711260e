"""Cluster switchover on real Apache Kafka: two clusters, MirrorMaker 2 between them.

Clusters `a` and `b` (Kafka 4.x, one node each, small heaps; both node 1: their ids
collide) and a real MirrorMaker 2 from Kafka's own jars replicating the topic and every
group's offsets from a to b (`sync.group.offsets.enabled`, identity policy). Through
kproxy run confluent-kafka's idempotent producer and consumer group, and Kafka's Java
idempotent producer and consumer group (tests/java/SwitchoverClients.java). kproxy
switches a -> b: no client is restarted or reconfigured, both producers go on writing
on b, and every record acknowledged (by a before the fence, by b after it) is read by
both groups on b; duplicates are counted (MirrorMaker's offset sync lags up to a
second). Then back to a. Last, a's broker is killed and kproxy fails over to b by itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.event_files import read_lines
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.mirror_maker import MirrorMaker
from tests.peers.net import wait_until
from tests.switchover_clients import JavaClients, PythonClients, post_switch, read_topic

pytestmark = pytest.mark.peers

TOPIC = "orders"
PARTITIONS = 3
# How far behind a group's offsets on b may be at the switch: the consumers commit every
# 0.5 s, MirrorMaker emits checkpoints and syncs group offsets every 1 s each; with slack.
MIRROR_LAG_SECONDS = 5.0


class Pair:
    def __init__(self, a: KafkaCluster, b: KafkaCluster, mirror: MirrorMaker) -> None:
        self.a, self.b, self.mirror = a, b, mirror


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    workdir = tmp_path_factory.mktemp("switchover")
    with (
        KafkaCluster(1, heap="320m", external_domain="a.invalid", workdir=workdir / "a") as a,
        KafkaCluster(1, heap="320m", external_domain="b.invalid", workdir=workdir / "b") as b,
    ):
        a.create_topic(TOPIC, PARTITIONS, 1)
        with MirrorMaker(a.internal_bootstrap, b.internal_bootstrap, [TOPIC], workdir) as mm:
            wait_until(lambda: TOPIC in b.admin().list_topics(timeout=5).topics, 120,
                       what=f"MirrorMaker to create {TOPIC} on b")  # fmt: skip
            yield Pair(a, b, mm)


def kproxy_for(tmp: Path, pair: Pair, **switchover: Any) -> KproxyProcess:
    proc = KproxyProcess(tmp, pair.a.external_bootstrap.split(","))
    del proc.config["cluster"]
    proc.config["clusters"] = {
        name: {
            "bootstrap_servers": cluster.external_bootstrap.split(","),
            "dial_overrides": cluster.dial_overrides,
            "connect_timeout_seconds": 3,
        }
        for name, cluster in (("a", pair.a), ("b", pair.b))
    }
    proc.config["switchover"] = {"active": "a", "fence_seconds": 10, **switchover}
    return proc


def synced_to_b(pair: Pair, group: str) -> bool:
    """MirrorMaker has written offsets of `group` to b for every partition."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    future = pair.b.admin().list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    offsets = future[group].result(timeout=10).topic_partitions
    return sum(1 for tp in offsets if tp.offset >= 0) == PARTITIONS


def resumed_on(tmp: Path, cluster: str) -> dict[tuple[str, str], float]:
    """(client id, api) -> ms from the fence to its first success on `cluster`."""
    return {
        (e["client_id"], e["api"]): e["ms"]
        for e in read_lines(tmp / "events")
        if e["type"] == "switchover" and e["phase"] == "resumed" and e["to_cluster"] == cluster
    }


def test_every_client_moves_to_b_and_back_untouched(pair: Pair, tmp_path: Path) -> None:
    with kproxy_for(tmp_path, pair) as proc:
        started = time.monotonic()
        python = PythonClients(proc.bootstrap, TOPIC, "py-group", "py")
        java = JavaClients(tmp_path, proc.bootstrap, TOPIC, "java-group", "java")
        try:
            wait_until(lambda: len(python.acked) >= 500 and len(java.acked) >= 500, 90,
                       what="both producers acknowledged on a")  # fmt: skip
            wait_until(lambda: len(python.consumed) >= 300 and len(java.consumed) >= 300, 90,
                       what="both groups reading on a")  # fmt: skip
            wait_until(lambda: synced_to_b(pair, "py-group") and synced_to_b(pair, "java-group"),
                       90, what="MirrorMaker to sync both groups' offsets to b")  # fmt: skip
            rate = (len(python.acked) + len(java.acked)) / (time.monotonic() - started)
            status, summary = post_switch(proc.admin_port, "b")
            assert status == 200, summary
            assert summary["fence_seconds"] < 10, summary  # seconds, not minutes
            print(f"switchover a -> b: {summary}")
            python_mark, java_mark = len(python.acked), len(java.acked)
            # Both producers go on, on b, and both groups read what they write there.
            wait_until(lambda: len(python.acked) >= python_mark + 500
                       and len(java.acked) >= java_mark + 500, 90,
                       what="both producers acknowledged on b")  # fmt: skip
            # (The first few after the mark may be a's: their callbacks can run late.)
            late = {v for _, v in python.acked[python_mark + 50 :]}
            late |= {v.encode() for v in java.acked[java_mark + 50 :]}
            assert late <= set(read_topic(pair.b.internal_bootstrap, TOPIC, PARTITIONS))

            # Every record acknowledged so far, by a or by b, is read by both groups on b.
            python.stop_producing()
            java.stop_producing()
            acknowledged = {v for _, v in python.acked} | {v.encode() for v in java.acked}

            def both_read_everything() -> bool:
                java_read = {v.encode() for v in java.consumed}
                return acknowledged <= set(python.consumed) and acknowledged <= java_read

            wait_until(both_read_everything, 120, what="both groups to read every record")
            # How long each client was without service: its first success on b.
            clients = {("py-producer", "Produce"), ("py-consumer", "Fetch"),
                       ("java-producer", "Produce"), ("java-consumer", "Fetch")}  # fmt: skip
            wait_until(lambda: clients <= set(resumed_on(tmp_path, "b")), 30,
                       what="each client's resumed event")  # fmt: skip
            print(f"back on b after the fence began (ms): {resumed_on(tmp_path, 'b')}")
            duplicates = {
                "python": len(python.consumed) - len(set(python.consumed)),
                "java": len(java.consumed) - len(set(java.consumed)),
            }
            print(f"acknowledged {len(acknowledged)} at {rate:.0f}/s; read twice: {duplicates}")
            # Read again from where MirrorMaker's last sync left each group: no more than
            # the records of that lag.
            assert max(duplicates.values()) <= rate * MIRROR_LAG_SECONDS, (duplicates, rate)
        finally:
            python.close()
            java_exit = java.close()
        assert python.failed == [] and java.failed == [], (python.failed[:5], java.failed[:5])
        assert java_exit == 0, java.log_path.read_text()[-3000:]

        # And back to a: new clients' records go there (MirrorMaker runs a -> b only, so
        # what was written on b meanwhile stays on b).
        status, summary = post_switch(proc.admin_port, "a")
        assert status == 200, summary
        back = PythonClients(proc.bootstrap, TOPIC, "py-group", "back")
        try:
            wait_until(lambda: len(back.acked) >= 200, 60, what="acknowledged on a again")
        finally:
            back.close()
        assert back.failed == []
        written_on_a = set(read_topic(pair.a.internal_bootstrap, TOPIC, PARTITIONS))
        assert {v for _, v in back.acked} <= written_on_a
        assert proc.metric("kproxy_switchovers_total", result="completed") == 2
        assert proc.topology()["cluster"]["active"] == "a"


def test_kproxy_fails_over_when_a_dies(pair: Pair, tmp_path: Path) -> None:
    # Last in the module: a's broker does not come back.
    failover = {"enabled": True, "after_seconds": 2, "min_interval_seconds": 300}
    with kproxy_for(tmp_path, pair, failover=failover) as proc:
        python = PythonClients(proc.bootstrap, TOPIC, "py-failover", "fo")
        try:
            wait_until(lambda: len(python.acked) >= 300, 60, what="acknowledged on a")
            pair.mirror.close()
            pair.a.stop_node(1, kill=True)
            wait_until(lambda: proc.topology()["cluster"]["active"] == "b", 60, what="failover")
            mark = len(python.acked)
            wait_until(lambda: len(python.acked) >= mark + 300, 90, what="acknowledged on b")
            python.stop_producing()
        finally:
            python.close()
        # Nothing acknowledged after the failover is lost: every such record is on b.
        written_on_b = set(read_topic(pair.b.internal_bootstrap, TOPIC, PARTITIONS))
        assert {v for _, v in python.acked[mark:]} <= written_on_b
        assert proc.metric("kproxy_switchovers_total", trigger="failover", result="completed") == 1
