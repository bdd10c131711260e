"""Real Apache Kafka (a 3-node KRaft cluster from Maven Central) behind kproxy.

The brokers advertise `broker-N.kafka.invalid` on the listener clients use; only kproxy
can dial them. While the Java client's own `kafka-producer-perf-test` and an idempotent
confluent-kafka producer write with acks=all, the test moves leadership for real: a
reassignment followed by a preferred-leader election, and a broker stopped and restarted.
Afterwards every acknowledged message is read back through kproxy (confluent-kafka and
the Java consumer), none twice but what librdkafka's own epoch bump re-sent
(tests/idempotent_bumps.py), and no client ever saw a broker's own address.

Other kproxy processes play gateways whose listener refuses administration
(`api_policy`): with the refused APIs advertised, confluent-kafka and the Java AdminClient
get TOPIC_AUTHORIZATION_FAILED with kproxy's reason; by default ApiVersions leaves them
out and both clients fail at once on their own; produce and consume go on, and a reload
that allows DeleteTopics holds on established connections.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.idempotent_bumps import unexplained_twice
from tests.java_perf import java_consume_count
from tests.kproxy_process import KproxyProcess
from tests.leak_check import LogLines, assert_no_leak
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.kafka_install import MAIN_PRODUCER_PERF
from tests.peers.net import wait_until
from tests.topic_admin import create_topic_error, delete_topic_error, java_create_topic, topics

pytestmark = [pytest.mark.peers, pytest.mark.slow]

TOPIC = "kproxy-real"
PARTITIONS = 6
PERF_RECORDS = 150_000


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, workdir=tmp_path_factory.mktemp("kafka")) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS, 3)
        yield cluster


@pytest.fixture(scope="module")
def kproxy(
    kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    tmp: Path = tmp_path_factory.mktemp("kproxy")
    with KproxyProcess(
        tmp,
        kafka.external_real_bootstrap.split(","),
        cluster={"dial_overrides": kafka.dial_overrides},
    ) as proc:
        yield proc


def test_java_and_confluent_clients_through_real_leader_changes(
    kafka: KafkaCluster, kproxy: KproxyProcess
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    perf_result: dict[str, object] = {}

    def java_perf() -> None:
        perf_result["run"] = kafka.java_tool(
            MAIN_PRODUCER_PERF,
            "--topic",
            TOPIC,
            "--num-records",
            str(PERF_RECORDS),
            "--record-size",
            "200",
            "--throughput",
            "10000",
            "--bootstrap-server",
            kproxy.bootstrap,
            "--command-property",
            "acks=all",
            "enable.idempotence=true",
            "retries=100",
            timeout=300,
            check=False,
        )

    producer_log = LogLines("real-producer")
    acked: list[int] = []
    errors: list[object] = []
    stop_producing = threading.Event()

    def confluent_producer() -> None:
        producer = Producer(
            {
                "bootstrap.servers": kproxy.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                # eos: the producer's id and epoch, whose bump on an error during a leader
                # move can write a message twice (confluentinc/librdkafka#4953, open).
                "debug": "broker,eos",
                "logger": producer_log.logger,
            }
        )
        i = 0
        while not stop_producing.is_set():
            try:
                producer.produce(
                    TOPIC,
                    value=b"c-%d" % i,
                    key=b"%d" % (i % 50),
                    on_delivery=lambda err, msg: (
                        acked.append(int(msg.value()[2:])) if err is None else errors.append(err)
                    ),
                )
                i += 1
            except BufferError:
                pass
            producer.poll(0.002)
        assert producer.flush(60) == 0

    perf = threading.Thread(target=java_perf)
    ours = threading.Thread(target=confluent_producer)
    perf.start()
    ours.start()
    try:
        wait_until(lambda: len(acked) > 2000, 60, what="the confluent producer to get going")
        before = kafka.leaders(TOPIC)
        # 1. A reassignment that changes partition 0's preferred replica, then a
        #    preferred-leader election through the Admin API.
        replicas = kafka.replicas(TOPIC)[0]
        new_order = [*replicas[1:], replicas[0]]
        kafka.reassign(TOPIC, 0, new_order)
        kafka.elect_preferred_leaders(TOPIC, [0])
        wait_until(lambda: kafka.leaders(TOPIC)[0] == new_order[0], 60, what="new leader of p0")
        # 2. A broker stopped and restarted: its partitions move, then come back.
        victim = kafka.leaders(TOPIC)[1]
        kafka.stop_node(victim)
        wait_until(
            lambda: all(leader != victim for leader in kafka.leaders(TOPIC).values()),
            60,
            what=f"leadership to leave broker {victim}",
        )
        mid = len(acked)
        wait_until(lambda: len(acked) > mid + 2000, 60, what="producing with a broker down")
        kafka.start_node(victim)
        kafka.elect_preferred_leaders(TOPIC)
        after = kafka.leaders(TOPIC)
        assert after != before or victim in after.values()
    finally:
        perf.join(300)
        stop_producing.set()
        ours.join(120)

    run = perf_result["run"]
    output = f"{run.stdout}\n{run.stderr}"  # type: ignore[attr-defined]
    assert run.returncode == 0, output  # type: ignore[attr-defined]
    assert f"{PERF_RECORDS} records sent" in output, output[-2000:]
    assert ".invalid" not in output, "the Java client saw a broker's own address"
    assert not errors, errors[:5]

    # Everything acknowledged is there, and the idempotent producer wrote nothing twice.
    consumer_log = LogLines("real-consumer")
    consumer = Consumer(
        {
            "bootstrap.servers": kproxy.bootstrap,
            "group.id": "kproxy-real-check",
            "enable.auto.commit": False,
            "debug": "broker",
            "logger": consumer_log.logger,
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    # Records are counted by where they are in the log: a consumer handed an offset it
    # had read already shows no record written twice; one message at two offsets does,
    # and the failure says where both are.
    at: dict[tuple[int, int], bytes] = {}
    total_expected = PERF_RECORDS + len(acked)
    idle = 0
    while len(at) < total_expected and idle < 60:
        batch = consumer.consume(10_000, 1.0)
        idle = idle + 1 if not batch else 0
        for m in batch:
            assert m.error() is None, m.error()
            where, value = (m.partition(), m.offset()), m.value()
            assert at.setdefault(where, value) == value, f"offset {where} read as two records"
    consumer.close()
    ours: dict[int, list[tuple[int, int]]] = {}
    for where, value in at.items():
        if value.startswith(b"c-"):
            ours.setdefault(int(value[2:]), []).append(where)
    # A message written twice fails the test unless librdkafka's own epoch bump re-sent it
    # (confluentinc/librdkafka#4953: tests/idempotent_bumps.py says what that allows).
    twice = unexplained_twice(ours, producer_log.lines, TOPIC)
    epoch_lines = [line for line in producer_log.lines if "epoch" in line.lower()]
    assert not twice, (
        f"written twice (message: [(partition, offset)...]): {twice}; "
        f"the producer's epoch lines: {epoch_lines[-20:]}"
    )
    assert set(acked) <= set(ours), f"{len(set(acked) - set(ours))} acked lost"
    assert len(at) - len(ours) >= PERF_RECORDS
    assert_no_leak([producer_log, consumer_log], kproxy)

    # The Java consumer reads through kproxy as well.
    assert java_consume_count(kafka, kproxy.bootstrap, TOPIC, total_expected) >= total_expected


def test_describe_configs_shows_no_broker_or_controller_address(
    kafka: KafkaCluster, kproxy: KproxyProcess
) -> None:
    """A broker describes its listeners, advertised listeners and the controller quorum
    to any client that asks: through kproxy those values are withheld (null, sensitive),
    and nothing else in the answer names a broker's or controller's address."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": kproxy.bootstrap})
    seen: dict[str, object] = {}
    for node in (1, 2, 3):  # librdkafka takes one broker resource per call
        resource = ConfigResource(ConfigResource.Type.BROKER, str(node))
        for future in admin.describe_configs([resource]).values():
            for name, entry in future.result(60).items():
                seen[name] = entry
    for name in ("listeners", "advertised.listeners", "controller.quorum.voters"):
        if name in seen:
            entry = seen[name]
            assert entry.value is None and entry.is_sensitive, (name, entry.value)  # type: ignore[attr-defined]
    assert "advertised.listeners" in seen
    values = " ".join(str(getattr(e, "value", "")) for e in seen.values())
    assert ".invalid" not in values and "127.0.0.1:" not in values, values[:2000]
    assert kproxy.metric("kproxy_config_values_redacted_total", api="DescribeConfigs") > 0


# --------------------------------------------------------------------------- API policy
MAIN_API_VERSIONS = "org.apache.kafka.tools.BrokerApiVersionsCommand"
GATEWAY_DENIES = [
    "CreateTopics",
    "DeleteTopics",
    "DeleteRecords",
    "AlterConfigs",
    "IncrementalAlterConfigs",
    "CreateAcls",
]


def gateway_process(tmp: Path, kafka: KafkaCluster, **policy: object) -> KproxyProcess:
    """A boundary listener that refuses administration; `kproxy` is the internal one."""
    return KproxyProcess(
        tmp,
        kafka.external_real_bootstrap.split(","),
        cluster={"dial_overrides": kafka.dial_overrides},
        listeners={"name": "gateway", "api_policy": {"deny": GATEWAY_DENIES, **policy}},
    )


@pytest.fixture(scope="module")
def gateway(
    kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    """Refused APIs stay in ApiVersions: clients send them and get the refusal."""
    with gateway_process(tmp_path_factory.mktemp("gw"), kafka, advertise_denied=True) as proc:
        yield proc


@pytest.fixture(scope="module")
def hiding_gateway(
    kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    """The default: refused APIs are left out of ApiVersions."""
    with gateway_process(tmp_path_factory.mktemp("hiding-gw"), kafka) as proc:
        yield proc


def test_gateway_refuses_create_topics_with_an_authorization_error(
    kafka: KafkaCluster, kproxy: KproxyProcess, gateway: KproxyProcess
) -> None:
    from confluent_kafka import KafkaError

    error = create_topic_error(gateway.bootstrap, "policy-confluent")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error  # type: ignore[attr-defined]
    assert "not allowed on kproxy listener 'gateway'" in error.str()  # type: ignore[attr-defined]
    # The Java AdminClient (kafka-topics.sh) gets the same, as an exception, not a timeout.
    java = java_create_topic(kafka, gateway.bootstrap, "policy-java", check=False)
    assert java.returncode != 0
    assert "TopicAuthorizationException" in java.stdout + java.stderr, java.stderr[-2000:]
    assert not {"policy-confluent", "policy-java"} & topics(kafka)
    # The internal listener allows everything: the same requests succeed there.
    assert create_topic_error(kproxy.bootstrap, "policy-confluent") is None
    java_create_topic(kafka, kproxy.bootstrap, "policy-java")
    assert {"policy-confluent", "policy-java"} <= topics(kafka)
    assert gateway.metric("kproxy_requests_refused_total", api="CreateTopics")
    assert "refused CreateTopics from client" in gateway.log()
    # A refusal behind requests still in flight waits for their answers alone: it is no
    # in-flight hold, and reading never paused for it.
    assert gateway.metric("kproxy_requests_held_total") == 0
    assert "more wait, reading paused" not in gateway.log()


def test_a_gateway_leaves_refused_apis_out_of_api_versions(
    kafka: KafkaCluster, hiding_gateway: KproxyProcess
) -> None:
    """By default the clients learn from ApiVersions that CreateTopics is not there and
    fail at once, each with its own error, without sending it."""
    from confluent_kafka import KafkaError

    versions = kafka.java_tool(MAIN_API_VERSIONS, "--bootstrap-server", hiding_gateway.bootstrap)
    assert "CreateTopics(19): UNSUPPORTED" in versions.stdout, versions.stdout[:3000]
    assert "DeleteRecords(21): UNSUPPORTED" in versions.stdout
    assert "Produce(0): 0 to" in versions.stdout and "\tFetch(1): " in versions.stdout
    error = create_topic_error(hiding_gateway.bootstrap, "policy-hidden")
    assert error is not None and error.code() == KafkaError._UNSUPPORTED_FEATURE, error  # type: ignore[attr-defined]
    java = java_create_topic(kafka, hiding_gateway.bootstrap, "policy-hidden", check=False)
    assert java.returncode != 0
    assert "UnsupportedVersionException" in java.stdout + java.stderr, java.stderr[-2000:]
    assert "policy-hidden" not in topics(kafka)
    assert hiding_gateway.metric("kproxy_requests_refused_total", api="CreateTopics") == 0


def test_gateway_serves_produce_and_consume_and_takes_a_new_policy_live(
    kafka: KafkaCluster, gateway: KproxyProcess
) -> None:
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

    topic, doomed = "policy-data", "policy-doomed"
    kafka.create_topic(topic, 1, 3)
    kafka.create_topic(doomed, 1, 3)
    producer = Producer({"bootstrap.servers": gateway.bootstrap, "acks": "all"})
    consumer = Consumer(
        {"bootstrap.servers": gateway.bootstrap, "group.id": "policy", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: list[bytes] = []

    def produce_and_read(values: range) -> None:
        for i in values:
            producer.produce(topic, value=b"%d" % i)
        assert producer.flush(60) == 0
        wait_until(
            lambda: (
                seen.extend(m.value() for m in consumer.consume(100, 1) if not m.error())
                or len(seen) >= values.stop
            ),
            60,
            what=f"{values.stop} records read back through the gateway",
        )

    produce_and_read(range(100))
    assert delete_topic_error(gateway.bootstrap, doomed).code() == (  # type: ignore[attr-defined]
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    )
    # A reload that allows DeleteTopics holds at once; kproxy closes no connection.
    closed = closed_connections(gateway)
    applied = gateway.metric("kproxy_config_reloads_total", result="applied")
    gateway.reload_with(
        {"listeners": {"api_policy": {"deny": ["CreateTopics"], "advertise_denied": True}}},
    )
    wait_until(
        lambda: gateway.metric("kproxy_config_reloads_total", result="applied") > applied,
        30,
        what="the policy reload",
    )
    produce_and_read(range(100, 110))
    assert closed_connections(gateway) == closed
    consumer.close()
    assert sorted(int(v) for v in seen) == list(range(110))
    assert delete_topic_error(gateway.bootstrap, doomed) is None
    wait_until(lambda: doomed not in topics(kafka), 30, what=f"{doomed} deleted")
    assert create_topic_error(gateway.bootstrap, "policy-still-denied") is not None
    assert gateway.metric("kproxy_connections_closed_total", cause="api_denied") == 0


def closed_connections(proc: KproxyProcess) -> float:
    """Client connections closed so far by anything but their client (whose admin
    clients close theirs when they are collected), every listener and cause."""
    from prometheus_client.parser import text_string_to_metric_families

    return sum(
        sample.value
        for family in text_string_to_metric_families(proc.metrics_text())
        for sample in family.samples
        if sample.name == "kproxy_connections_closed_total"
        and sample.labels["cause"] != "client_closed"
    )
