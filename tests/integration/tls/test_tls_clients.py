"""Every client through kproxy to the TLS-only cluster, over TLS and in plaintext, with
hostname verification on; and the leak hunt over TLS while leadership moves for real.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.integration.tls.clients import CLIENTS, MESSAGES, ClientTls, values
from tests.java_perf import java_consume_count, java_produce
from tests.kproxy_process import KproxyProcess
from tests.leak_check import LogLines, assert_no_leak
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import wait_until
from tests.tls_material import TlsMaterial

pytestmark = [pytest.mark.peers, pytest.mark.slow]


@pytest.mark.parametrize("client", [*CLIENTS, "java"])
@pytest.mark.parametrize("side", ["tls", "plaintext"])
def test_clients_produce_and_consume_exactly(
    client: str,
    side: str,
    kafka: KafkaCluster,
    certs: TlsMaterial,
    tls_kproxy: KproxyProcess,
    plain_kproxy: KproxyProcess,
    tmp_path: Path,
) -> None:
    """Each client, with hostname verification on, writes MESSAGES records through kproxy
    to the TLS-only cluster and reads exactly those back."""
    proxy = tls_kproxy if side == "tls" else plain_kproxy
    topic = f"tls-{side}-{client}"
    kafka.create_topic(topic, 2, 2)
    how = ClientTls(certs, side == "tls")
    if client == "java":
        properties = how.java_properties(tmp_path / "client.properties")
        java_produce(kafka, proxy.bootstrap, topic, MESSAGES, properties)
        assert java_consume_count(kafka, proxy.bootstrap, topic, MESSAGES, properties) == MESSAGES
    else:
        settings = {
            "confluent": how.confluent,
            "kafka-python": how.kafka_python,
            "aiokafka": how.aiokafka,
        }[client]()
        got = CLIENTS[client](proxy.bootstrap, settings, topic)
        assert sorted(got) == sorted(values(MESSAGES, topic))
    assert proxy.metric("kproxy_upstream_connect_failures_total", reason="tls") == 0


def test_no_broker_address_reaches_a_tls_client_through_leader_churn(
    kafka: KafkaCluster, certs: TlsMaterial, tls_kproxy: KproxyProcess
) -> None:
    """An idempotent producer and a consumer over TLS while leadership moves for real
    (reassignments and elections, the KIP-951 redirects of Produce and Fetch): every
    acknowledged record is read back, and the clients' own logs (librdkafka's broker
    debug lines) never name a broker's address or a port that is not kproxy's."""
    from confluent_kafka import Consumer, Producer

    topic = "tls-churn"
    kafka.create_topic(topic, 4, 2)
    tls = ClientTls(certs, True).confluent()
    producer_log, consumer_log = LogLines("tls-churn-producer"), LogLines("tls-churn-consumer")
    producer = Producer(
        {
            "bootstrap.servers": tls_kproxy.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "debug": "broker",
            "logger": producer_log.logger,
            **tls,
        }
    )
    acked: list[bytes] = []
    failed: list[object] = []
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set():
            try:
                producer.produce(
                    topic,
                    b"%d" % i,
                    on_delivery=lambda err, msg: (failed if err else acked).append(
                        err or msg.value()
                    ),
                )
                i += 1
            except BufferError:
                pass
            producer.poll(0.002)

    changes_before = tls_kproxy.metric("kproxy_leader_changes_total", source_api="Metadata")
    writer = threading.Thread(target=write)
    writer.start()
    try:
        wait_until(lambda: len(acked) > 1000, 60, what="the producer to get going")
        kafka.rotate_leaders(topic, 4)
        count = len(acked)
        wait_until(lambda: len(acked) > count + 1000, 60, what="writing after the moves")
    finally:
        stop.set()
        writer.join()
    assert producer.flush(60) == 0
    assert not failed, failed[:3]
    consumer = Consumer(
        {
            "bootstrap.servers": tls_kproxy.bootstrap,
            "group.id": "tls-churn",
            "auto.offset.reset": "earliest",
            "debug": "broker",
            "logger": consumer_log.logger,
            **tls,
        }
    )
    consumer.subscribe([topic])
    read: set[bytes] = set()
    try:
        wait_until(lambda: _poll_set(consumer, read) >= set(acked), 90, what="every acked record")
    finally:
        consumer.close()
    assert_no_leak([producer_log, consumer_log], tls_kproxy)
    moved = sum(
        tls_kproxy.metric("kproxy_leader_changes_total", source_api=api)
        for api in ("Metadata", "Produce", "Fetch")
    )
    assert moved > changes_before, "no leader change went through kproxy"


def _poll_set(consumer: Any, read: set[bytes]) -> set[bytes]:
    for msg in consumer.consume(1000, 0.5):
        if msg.error() is None:
            read.add(msg.value())
    return read
