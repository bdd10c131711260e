"""Two tenants through one kproxy in front of one real Apache Kafka 4.x: each runs the
same client code with the same topic, group and transactional id names (an
AdminClient, a transactional producer, a classic consumer group and a KIP-848 one, each
rebalanced by a second member),
sees only its own, under the names it used, while the cluster holds the prefixed
names; and neither reaches the other's, not by guessing the prefixed name either.
Kafka's Java clients run an exactly-once pipeline per tenant in a KIP-848 group
(tests/java/TenantProbe.java). A connection's tenant is its client certificate's
principal (kproxy terminates TLS)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.event_files import read_lines
from tests.integration.acl_clients import Caller, tls_caller
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import wait_until
from tests.tls_material import TlsMaterial

pytestmark = [pytest.mark.peers, pytest.mark.slow]
PROBE = Path(__file__).resolve().parents[1] / "java" / "TenantProbe.java"

TENANTS = {
    "tenants": [
        {"name": "team-a", "principals": ["User:alice"]},
        {"name": "team-b", "principals": ["User:bob"]},
    ]
}


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return TlsMaterial(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=1, heap="320m", workdir=tmp_path_factory.mktemp("kafka")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def kproxy(
    kafka: KafkaCluster, certs: TlsMaterial, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    proxy = certs.proxy()
    proc = KproxyProcess(
        tmp_path_factory.mktemp("kproxy"),
        kafka.internal_bootstrap.split(","),
        listeners={
            "tls": {
                "certificate": str(proxy.certificate),
                "key": str(proxy.key),
                "client_ca": str(certs.proxy_ca_file),
            },
            "tenancy": TENANTS,
        },
        principals={"tls_mapping_rules": ["RULE:^CN=([^,]+).*$/$1/"]},
    )
    with proc:
        yield proc


def tenant(certs: TlsMaterial, user: str) -> Caller:
    pair = certs.issue(certs.proxy_ca, user, f"{user}.clients.invalid", common_name=user)
    return tls_caller(user, certs.proxy_ca_file, pair)


def same_code(bootstrap: str, caller: Caller) -> dict[str, Any]:
    """What every tenant runs: the same names, the same steps."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    settings = {"bootstrap.servers": bootstrap, **caller.confluent}
    admin = AdminClient(settings)
    seen: dict[str, Any] = {}
    created = admin.create_topics([NewTopic("orders", 1, 1), NewTopic("pairs", 2, 1)])
    errors = [future.exception(60) for future in created.values()]
    seen["create"] = [None if e is None else e.args[0].code() for e in errors]
    producer = Producer({**settings, "transactional.id": "checkout"})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(3):
        producer.produce("orders", f"{caller.user}-{i}".encode())
    producer.commit_transaction(60)
    for protocol in ("classic", "consumer"):
        consumer = Consumer(
            {
                **settings,
                "group.id": f"billing-{protocol}",
                "group.protocol": protocol,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            }
        )
        consumer.subscribe(["orders"])
        values: list[str] = []
        deadline = time.monotonic() + 60
        try:
            while len(values) < 3 and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    values.append(msg.value().decode())
            consumer.commit(asynchronous=False)
        finally:
            consumer.close()
        seen[f"consumed {protocol}"] = values
    for protocol in ("classic", "consumer"):
        seen[f"rebalanced {protocol}"] = rebalanced(settings, protocol)
    listed = admin.list_topics(timeout=30).topics
    seen["topics"] = sorted(t for t in listed if not t.startswith("__"))
    groups = admin.list_consumer_groups().result(30)
    seen["groups"] = sorted(g.group_id for g in groups.valid)
    return seen


def rebalanced(settings: dict[str, Any], protocol: str) -> list[int]:
    """Two members of one group on the two partitions of "pairs": the partitions each
    holds once the second member's join has rebalanced the group."""
    from confluent_kafka import Consumer

    group = {**settings, "group.id": f"pair-{protocol}", "group.protocol": protocol}
    members = [Consumer(group) for _ in range(2)]
    held = [0, 0]
    try:
        for member in members:
            member.subscribe(["pairs"])
        deadline = time.monotonic() + 60
        while held != [1, 1] and time.monotonic() < deadline:
            for member in members:
                member.poll(0.2)
            held = [len(member.assignment()) for member in members]
    finally:
        for member in members:
            member.close()
    return held


def java_probe(kafka: KafkaCluster, bootstrap: str, caller: Caller, tmp: Path) -> dict[str, str]:
    """tests/java/TenantProbe.java as `caller`: its "key value" lines."""
    properties = tmp / f"{caller.user}.properties"
    properties.write_text(caller.java)
    probe = kafka.java_client(str(PROBE), bootstrap, str(properties), "3", timeout=240, check=False)
    assert probe.returncode == 0, f"{probe.stdout}\n{probe.stderr}"[-4000:]
    lines = (line.split(" ", 1) for line in probe.stdout.splitlines() if " " in line)
    return {key: value for key, value in lines}


def test_two_tenants_run_the_same_code_and_see_only_their_own(
    kafka: KafkaCluster, kproxy: KproxyProcess, certs: TlsMaterial, tmp_path: Path
) -> None:
    from confluent_kafka.admin import AdminClient

    for user in ("alice", "bob"):
        caller = tenant(certs, user)
        seen = same_code(kproxy.bootstrap, caller)
        assert seen == {
            "create": [None, None],
            "rebalanced classic": [1, 1],
            "rebalanced consumer": [1, 1],
            "consumed classic": [f"{user}-{i}" for i in range(3)],
            "consumed consumer": [f"{user}-{i}" for i in range(3)],
            "topics": ["orders", "pairs"],
            "groups": ["billing-classic", "billing-consumer", "pair-classic", "pair-consumer"],
        }, user
        java = java_probe(kafka, kproxy.bootstrap, caller, tmp_path)
        assert java["topics"] == "orders,pairs,payments"
        assert java["committed"] == "3"  # the exactly-once pipeline's offsets, its own
        assert java["payments"] == ",".join(f"paid-{user}-{i}" for i in range(3))
        groups = java["groups"].split(",")
        assert "eos-java" in groups and "billing-classic" in groups
        assert not [g for g in groups if g.startswith("team-")]
    # Metrics and the audit trail say whose requests they were.
    for name in ("team-a", "team-b"):
        assert kproxy.metric("kproxy_tenant_requests_total", tenant=name, api="Produce") > 0

    def created() -> set[tuple[str, str]]:
        return {
            (line["tenant"], resource)
            for line in read_lines(kproxy.tmp / "events")
            if line["type"] == "audit" and line["api"] == "CreateTopics"
            for resource in line["resources"]
        }

    names = ("orders", "pairs", "payments")
    wanted = {(f"team-{t}", f"topic:team-{t}.{n}") for t in "ab" for n in names}
    wait_until(lambda: created() >= wanted, 30, what="the tenants' CreateTopics audit records")
    # The cluster holds each tenant's names under its prefix.
    admin = AdminClient({"bootstrap.servers": kafka.internal_bootstrap})
    topics = sorted(t for t in admin.list_topics(timeout=30).topics if not t.startswith("__"))
    assert topics == [f"team-{t}.{n}" for t in "ab" for n in ("orders", "pairs", "payments")]
    groups = {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    assert {f"team-{t}.{g}" for t in "ab" for g in ("billing-classic", "eos-java")} <= groups
    assert all(g.startswith(("team-a.", "team-b.")) for g in groups)


def test_a_tenant_cannot_reach_the_others_names_even_prefixed(
    kafka: KafkaCluster, kproxy: KproxyProcess, certs: TlsMaterial
) -> None:
    """team-b's topic and group, made on the cluster: alice, guessing their prefixed
    names, can neither describe, write, delete nor commit to them."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, Producer
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

    cluster = AdminClient({"bootstrap.servers": kafka.internal_bootstrap})
    guarded, group = "team-b.guarded", "team-b.guarded-group"
    assert cluster.create_topics([NewTopic(guarded, 1, 1)])[guarded].exception(60) is None
    committed = ConsumerGroupTopicPartitions(group, [_partition(guarded, 7)])
    (future,) = cluster.alter_consumer_group_offsets([committed]).values()
    assert future.exception(60) is None

    settings = {"bootstrap.servers": kproxy.bootstrap, **tenant(certs, "alice").confluent}
    admin = AdminClient(settings)
    # Guessed, the other's name is just another of alice's own names: it does not exist.
    described = admin.list_topics(topic=guarded, timeout=30).topics[guarded]
    assert described.error is not None
    assert described.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    deleted = admin.delete_topics([guarded], operation_timeout=30)[guarded].exception(60)
    assert deleted is not None and deleted.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    configs = admin.describe_configs([ConfigResource(ResourceType.BROKER, "1")])
    (future,) = configs.values()
    error = future.exception(30)
    assert error is not None and error.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    outcome: list[int] = []
    producer = Producer({**settings, "message.timeout.ms": 10000})
    producer.produce(
        guarded, b"x", on_delivery=lambda err, _m: outcome.append(0 if err is None else err.code())
    )
    producer.flush(30)
    assert outcome and outcome[0] != 0
    consumer = Consumer({**settings, "group.id": group})
    try:
        assert consumer.committed([_partition("orders")], timeout=30)[0].offset < 0
    finally:
        consumer.close()
    overwrite = ConsumerGroupTopicPartitions(group, [_partition("orders", 0)])
    (future,) = admin.alter_consumer_group_offsets([overwrite]).values()
    future.exception(60)  # whatever alice is told, it lands under her own prefix
    # On the cluster, team-b's are as they were.
    assert guarded in cluster.list_topics(timeout=30).topics
    low, high = _watermarks(kafka, guarded)
    assert (low, high) == (0, 0)
    asked = ConsumerGroupTopicPartitions(group, [_partition(guarded)])
    (future,) = cluster.list_consumer_group_offsets([asked]).values()
    assert [tp.offset for tp in future.result(30).topic_partitions] == [7]


def _partition(topic: str, offset: int = -1001) -> Any:
    from confluent_kafka import TopicPartition

    return TopicPartition(topic, 0, offset)


def _watermarks(kafka: KafkaCluster, topic: str) -> tuple[int, int]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": kafka.internal_bootstrap, "group.id": "peek"})
    try:
        low, high = consumer.get_watermark_offsets(_partition(topic), timeout=30)
    finally:
        consumer.close()
    return int(low), int(high)
