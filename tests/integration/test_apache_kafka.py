"""Real Apache Kafka (a 3-node KRaft cluster from Maven Central) behind kproxy.

The brokers advertise `broker-N.kafka.invalid` on the listener clients use; only kproxy
can dial them. While the Java client's own `kafka-producer-perf-test` and an idempotent
confluent-kafka producer write with acks=all, the test moves leadership for real: a
reassignment followed by a preferred-leader election, and a broker stopped and restarted.
Afterwards every acknowledged message is read back through kproxy (confluent-kafka and
the Java consumer), none twice, and no client ever saw a broker's own address.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_leak_hunt import LogLines, assert_no_leak
from tests.java_perf import java_consume_count
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import MAIN_PRODUCER_PERF, KafkaCluster
from tests.peers.net import wait_until

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
                "debug": "broker",
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
    ours_seen: list[int] = []
    perf_count = 0
    total_expected = PERF_RECORDS + len(acked)
    idle = 0
    while perf_count + len(ours_seen) < total_expected and idle < 60:
        batch = consumer.consume(10_000, 1.0)
        idle = idle + 1 if not batch else 0
        for m in batch:
            assert m.error() is None, m.error()
            value = m.value()
            if value.startswith(b"c-"):
                ours_seen.append(int(value[2:]))
            else:
                perf_count += 1
    consumer.close()
    assert len(ours_seen) == len(set(ours_seen)), "a message was written twice"
    assert set(acked) <= set(ours_seen), f"{len(set(acked) - set(ours_seen))} acked lost"
    assert perf_count >= PERF_RECORDS
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
