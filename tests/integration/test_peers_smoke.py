"""Smoke tests of the real-peer harness (tests/peers): every peer starts, serves a real
client DIRECTLY (no proxy in between) and is stopped again.

Run: ``python -m pytest tests/integration/test_peers_smoke.py -q`` (needs the peers
installed by ``.ci/install-peers.sh``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from kafka import KafkaAdminClient
from kafka.errors import KafkaConnectionError

from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.kafka_install import MAIN_PRODUCER_PERF
from tests.peers.kcat import run_kcat
from tests.peers.mock_cluster import MockCluster
from tests.peers.net import LOOPBACK, metadata_brokers, port_open
from tests.peers.tansu import CONSUMER_DEFAULTS, TANSU_NODE_ID, TansuBroker, TansuProxy

pytestmark = pytest.mark.peers

PRODUCE_API_KEY = 0


def _produce(
    bootstrap: str, topic: str, values: list[bytes], partition: int = -1, **conf: Any
) -> None:
    delivered: list[bytes] = []
    errors: list[str] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            delivered.append(msg.value())

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 3, **conf})
    for value in values:
        producer.produce(topic, value, partition=partition, on_delivery=on_delivery)
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} messages not delivered"
    assert not errors, errors
    assert delivered == values


def _consume_assigned(
    bootstrap: str, topic: str, partition: int, count: int, timeout: float = 30.0
) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"smoke-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "log_level": 3,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        return _poll(consumer, count, timeout)
    finally:
        consumer.close()


def _consume_group(
    bootstrap: str,
    topic: str,
    count: int,
    timeout: float = 60.0,
    conf: Mapping[str, Any] | None = None,
) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"smoke-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "log_level": 3,
            **(conf or {}),
        }
    )
    try:
        consumer.subscribe([topic])
        return _poll(consumer, count, timeout)
    finally:
        consumer.close()


def _poll(consumer: Consumer, count: int, timeout: float) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        value = msg.value()
        assert value is not None
        got.append(value)
    assert len(got) == count, f"consumed {len(got)} of {count} within {timeout}s"
    return got


# --------------------------------------------------------------------------------------
# librdkafka mock cluster
# --------------------------------------------------------------------------------------


def test_mock_cluster_produce_consume_and_leader_move() -> None:
    with MockCluster(brokers=3) as mc:
        ports = mc.broker_ports()
        assert sorted(ports) == [1, 2, 3]
        assert mc.bootstraps == ",".join(f"{LOOPBACK}:{ports[i]}" for i in (1, 2, 3))
        mc.create_topic("smoke", partitions=1, replication=3)
        mc.set_leader("smoke", 0, 1)

        first = [f"a{i}".encode() for i in range(10)]
        _produce(mc.bootstraps, "smoke", first, partition=0)

        mc.start_request_tracking()
        mc.set_leader("smoke", 0, 3)
        second = [f"b{i}".encode() for i in range(10)]
        _produce(mc.bootstraps, "smoke", second, partition=0)
        mc.stop_request_tracking()
        produce_to = {r.broker_id for r in mc.get_requests() if r.api_key == PRODUCE_API_KEY}
        assert produce_to == {3}, f"Produce requests went to {produce_to}"

        assert _consume_assigned(mc.bootstraps, "smoke", 0, 20) == first + second

        overrides = mc.advertise_invalid_names()
        assert overrides == {
            f"broker-{i}.cluster.invalid:{p}": f"{LOOPBACK}:{p}" for i, p in ports.items()
        }
        advertised = metadata_brokers(LOOPBACK, ports[2])
        assert advertised == {i: (f"broker-{i}.cluster.invalid", p) for i, p in ports.items()}

        new_port = mc.add_broker(4)
        assert new_port is not None and port_open(LOOPBACK, new_port)
        assert mc.broker_ports()[4] == new_port
    assert not port_open(LOOPBACK, ports[1])


# --------------------------------------------------------------------------------------
# Tansu
# --------------------------------------------------------------------------------------


def test_tansu_produce_consume_and_proxy() -> None:
    with TansuBroker() as broker:
        assert metadata_brokers(LOOPBACK, broker.port) == {TANSU_NODE_ID: (LOOPBACK, broker.port)}
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})
        admin.create_topics([NewTopic("smoke", 1, 1)])["smoke"].result(timeout=30)
        values = [f"t{i}".encode() for i in range(5)]
        _produce(broker.bootstrap, "smoke", values)
        assert _consume_group(broker.bootstrap, "smoke", 5, conf=CONSUMER_DEFAULTS) == values

        with TansuProxy(origin=broker.bootstrap) as proxy:
            assert metadata_brokers(LOOPBACK, proxy.port) == {TANSU_NODE_ID: (LOOPBACK, proxy.port)}
            _produce(proxy.bootstrap, "smoke", [b"via-proxy"])
        assert not proxy.running
    assert not broker.running and not port_open(LOOPBACK, broker.port)


def test_kcat_metadata_against_tansu() -> None:
    with TansuBroker() as broker:
        out = run_kcat(["-b", broker.bootstrap, "-L", "-m", "15"]).stdout
        assert f"broker {TANSU_NODE_ID} at {broker.bootstrap}" in out, out
        run_kcat(
            ["-b", broker.bootstrap, "-P", "-t", "kcat-smoke", "-p", "0"], input_data="k1\nk2\n"
        )
        consumed = run_kcat(
            [
                "-b",
                broker.bootstrap,
                "-C",
                "-t",
                "kcat-smoke",
                "-p",
                "0",
                "-o",
                "beginning",
                "-e",
                "-q",
            ]
        ).stdout
        assert consumed.split() == ["k1", "k2"]


# --------------------------------------------------------------------------------------
# Apache Kafka (3-node KRaft, combined mode)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaCluster]:
    started = time.monotonic()
    with KafkaCluster(nodes=3) as cluster:
        print(f"Kafka {cluster.version} 3-node cluster ready in {time.monotonic() - started:.1f}s")
        yield cluster


@pytest.mark.timeout(240)
def test_kafka_cluster_produce_consume(kafka: KafkaCluster) -> None:
    kafka.create_topic("smoke", partitions=3, rf=3)
    assert set(kafka.leaders("smoke")) == {0, 1, 2}
    values = [f"k{i}".encode() for i in range(10)]
    _produce(kafka.internal_bootstrap, "smoke", values, partition=1)
    assert _consume_assigned(kafka.internal_bootstrap, "smoke", 1, 10) == values
    assert sorted(_consume_group(kafka.internal_bootstrap, "smoke", 10)) == sorted(values)


@pytest.mark.timeout(240)
def test_kafka_external_listener_advertises_invalid_names(kafka: KafkaCluster) -> None:
    want = {n.node_id: (n.external_host, n.external_port) for n in kafka.nodes.values()}
    assert all(host.endswith(".kafka.invalid") for host, _ in want.values())
    # Raw Metadata v1 over each EXTERNAL socket: only the unresolvable names come back.
    for node in kafka.nodes.values():
        assert metadata_brokers(LOOPBACK, node.external_port) == want
    # And a real client bootstrapping on an EXTERNAL socket learns the same names and
    # cannot go on to reach them: that is kproxy's job, via dial_overrides. kafka-python
    # bootstraps with one Metadata request and keeps what it learned. (librdkafka is no
    # witness here: since 2.10 it drops the bootstrap connection when that first reply
    # names other brokers, which fails its own pending Metadata request and re-bootstraps,
    # so whether list_topics ever returns is a race.)
    node1 = kafka.node(1)
    admin = KafkaAdminClient(
        bootstrap_servers=f"{LOOPBACK}:{node1.external_port}", request_timeout_ms=15_000
    )
    try:
        learned = admin._client.cluster.brokers()
        assert {b.node_id: (b.host, b.port) for b in learned} == want
        with pytest.raises(KafkaConnectionError, match="DNS"):
            admin.describe_cluster()
    finally:
        admin.close()
    assert kafka.dial_overrides == {f"{h}:{p}": f"{LOOPBACK}:{p}" for h, p in want.values()}
    assert kafka.external_bootstrap == ",".join(f"{h}:{p}" for h, p in want.values())
    # The INTERNAL listener advertises loopback addresses.
    assert metadata_brokers(LOOPBACK, node1.internal_port) == {
        n.node_id: (LOOPBACK, n.internal_port) for n in kafka.nodes.values()
    }


@pytest.mark.timeout(300)
def test_kafka_leadership_tools(kafka: KafkaCluster) -> None:
    kafka.create_topic("moves", partitions=1, rf=3)
    replicas = kafka.replicas("moves")[0]
    assert len(replicas) == 3

    # Reassign to a new preferred order, then elect the new preferred leader.
    target = [replicas[1], replicas[2], replicas[0]]
    kafka.reassign("moves", 0, target)
    assert kafka.replicas("moves")[0] == target
    assert kafka.elect_preferred_leaders("moves")[0] == target[0]

    # Stopping the leader moves leadership; restarting + preferred election moves it back.
    leader = target[0]
    kafka.stop_node(leader)
    assert kafka.leaders("moves")[0] in set(target) - {leader}
    _produce(kafka.internal_bootstrap, "moves", [b"while-down"])
    kafka.start_node(leader)
    assert kafka.elect_preferred_leaders("moves")[0] == leader
    assert _consume_assigned(kafka.internal_bootstrap, "moves", 0, 1) == [b"while-down"]

    # The standard Java perf tool runs on the harness classpath.
    perf = kafka.java_tool(
        MAIN_PRODUCER_PERF,
        "--topic", "moves", "--num-records", "2000", "--record-size", "100",
        "--throughput", "-1",
        "--bootstrap-server", kafka.internal_bootstrap,
        "--command-property", "acks=all", "linger.ms=5",
        timeout=120,
    )  # fmt: skip
    assert "2000 records sent" in perf.stdout, perf.stdout
    assert "CurrentVoters" in kafka.describe_quorum()
