"""Cluster switchover on real Apache Kafka: two clusters, MirrorMaker 2 between them.

Clusters `a` and `b` (Kafka 4.x, one node each, small heaps; both node 1: their ids
collide) and a real MirrorMaker 2 from Kafka's own jars replicating the topic and every
group's offsets from a to b (`sync.group.offsets.enabled`, identity policy). Through
kproxy run confluent-kafka's idempotent producer and consumer group, and Kafka's Java
idempotent producer and consumer group (tests/java/SwitchoverClients.java). kproxy
switches a -> b: no client is restarted or reconfigured, both producers go on writing
on b, and every record acknowledged (by a before the fence, by b after it) is read by
both groups on b; duplicates are counted (MirrorMaker's offset sync lags up to a
second). Then back to a. Transactions: one left open on a at the fence is aborted there
by kproxy (long before a's transaction timeout) and never reaches b, while transactional
producers (confluent-kafka's, and Kafka's Java one) go on on b. Last, a's broker is
killed and kproxy fails over to b by itself.
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
from tests.switchover_clients import (
    JavaClients,
    JavaTransactions,
    PythonClients,
    post_switch,
    read_committed,
    read_topic,
)

pytestmark = pytest.mark.peers

TOPIC = "orders"
TX_TOPIC = "payments"  # written in transactions
PARTITIONS = 3
# Transactions time out on a after this long: kproxy must end the open one far sooner.
TRANSACTION_TIMEOUT_MS = 60_000
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
        a.create_topic(TX_TOPIC, PARTITIONS, 1)
        topics = [TOPIC, TX_TOPIC]
        with MirrorMaker(a.internal_bootstrap, b.internal_bootstrap, topics, workdir) as mm:
            wait_until(lambda: set(topics) <= set(b.admin().list_topics(timeout=5).topics), 120,
                       what="MirrorMaker to create the topics on b")  # fmt: skip
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
            # Its connection cut at the fence, and nothing else: the topic ids it learned
            # on a are named as b's (a Produce v13 naming a's would be UNKNOWN_TOPIC_ID,
            # and its batches could then be appended out of order, KAFKA-14359).
            assert set(java.produce_errors()) <= {"NETWORK_EXCEPTION"}, java.produce_errors()
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


def transactional_producer(bootstrap: str, transactional_id: str) -> Any:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
         "client.id": transactional_id, "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS}
    )  # fmt: skip
    producer.init_transactions(30)
    return producer


def committed_on_b(pair: Pair) -> list[str]:
    return read_committed(pair.b.internal_bootstrap, TX_TOPIC, PARTITIONS)


def commit(producer: Any, values: list[str]) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(TX_TOPIC, value.encode(), partition=0)
    producer.commit_transaction(30)


def test_open_transactions_are_aborted_on_a_and_never_half_moved(
    pair: Pair, tmp_path: Path
) -> None:
    from confluent_kafka import KafkaException, Producer

    with kproxy_for(tmp_path, pair) as proc:
        java = JavaTransactions(tmp_path, proc.bootstrap, TX_TOPIC, "java-tx")
        held = transactional_producer(proc.bootstrap, "py-tx")
        try:
            commit(held, ["py-tx:0-0", "py-tx:0-1"])
            # A transaction left open on a across the switchover: its records are on a.
            held.begin_transaction()
            for j in range(3):
                held.produce(TX_TOPIC, f"py-tx:held-{j}".encode(), partition=0)
            assert held.flush(30) == 0
            # A record after it, written to a directly: read-committed readers of a
            # (MirrorMaker) reach it only once the open transaction has ended.
            direct = Producer({"bootstrap.servers": pair.a.internal_bootstrap})
            direct.produce(TX_TOPIC, b"after-held", partition=0)
            assert direct.flush(30) == 0
            wait_until(lambda: len(java.committed) >= 20, 90, what="Java transactions on a")

            status, summary = post_switch(proc.admin_port, "b")
            assert status == 200, summary
            print(f"switchover a -> b: {summary}")
            # Both producers' ids were fenced on a, their open transactions aborted...
            assert summary["transactions_aborted"] == 2, summary
            assert summary["transactions_not_aborted"] == 0, summary
            # ...so MirrorMaker reads past the held one at once, not after its timeout.
            switched = time.monotonic()
            wait_until(lambda: "after-held" in committed_on_b(pair), TRANSACTION_TIMEOUT_MS / 2000,
                       what="MirrorMaker past the aborted transaction")  # fmt: skip
            print(f"past the aborted transaction on b after {time.monotonic() - switched:.1f} s")

            # The held transaction fails on b, which never gave its producer id; aborted,
            # the producer goes on there, untouched.
            with pytest.raises(KafkaException) as failed:
                held.commit_transaction(30)
            assert failed.value.args[0].txn_requires_abort(), failed.value
            held.abort_transaction(30)
            commit(held, ["py-tx:1-0", "py-tx:1-1"])
            mark = len(java.committed)
            wait_until(lambda: len(java.committed) >= mark + 20, 90,
                       what="Java transactions on b")  # fmt: skip
        finally:
            java_exit = java.close()
        assert java_exit == 0, java.log_path.read_text()[-3000:]
        print(f"Java producer: {java.lines('ABORTED')[:2]} {java.lines('FATAL')[:2]}")

        committed = [f"py-tx:{n}-{j}" for n in (0, 1) for j in (0, 1)]
        committed += [f"java-tx:{n}-{j}" for n in java.committed for j in range(5)]

        wait_until(lambda: set(committed) <= set(committed_on_b(pair)), 60,
                   what="every committed transaction on b")  # fmt: skip
        on_b = committed_on_b(pair)
        # Never half-moved: nothing of the aborted transaction, and every transaction
        # on b whole (its five records, or none).
        assert not [v for v in on_b if v.startswith("py-tx:held")]
        java_records = [v.split(":")[1] for v in on_b if v.startswith("java-tx:")]
        per_transaction: dict[str, int] = {}
        for value in java_records:
            n = value.split("-")[0]
            per_transaction[n] = per_transaction.get(n, 0) + 1
        assert set(per_transaction.values()) == {5}, per_transaction
        assert proc.metric("kproxy_switchover_transactions_total", result="aborted") == 2


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
