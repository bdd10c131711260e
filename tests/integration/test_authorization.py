"""kproxy's authorization rules against real Kafka ACLs as the oracle.

Two single-node Kafka clusters with SASL (PLAIN for alice, SCRAM-SHA-256 for bob):
one enforces ACLs with the StandardAuthorizer, the other allows everything and sits
behind kproxy, whose `listeners.authorization` rules say what the ACLs say. The same
client operations (confluent-kafka's producer, consumer and AdminClient, and
kafka-python speaking old, non-flexible versions) run (a) directly against the ACL
cluster and (b) through kproxy: the error each client sees, entity by entity, and the
topics each principal's Metadata lists, are equal.
"""

from __future__ import annotations

import datetime
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kio_support import decode_response_frame, encode_request_frame
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.topic_admin import MAIN_TOPIC_COMMAND

pytestmark = [pytest.mark.peers, pytest.mark.slow]

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "kproxy": "kproxy-secret"}
MECHANISMS = {"alice": "PLAIN", "bob": "SCRAM-SHA-256"}
TOPICS = ("auth-a", "auth-shared", "other-x")
# What the ACLs say, as kproxy rules: alice may do anything to `auth-*` topics and read
# her `alice-*` groups; bob may write `auth-shared` only.
RULES: dict[str, Any] = {
    "rules": [
        {"effect": "allow", "principals": ["User:alice"], "topics": ["auth-*"]},
        {
            "effect": "allow",
            "principals": ["User:alice"],
            "groups": ["alice-*"],
            "operations": ["read"],
        },
        {
            "effect": "allow",
            "principals": ["User:bob"],
            "topics": ["auth-shared"],
            "operations": ["write"],
        },
    ],
    "default": "deny",
}


def _broker_config(acls: bool) -> dict[str, Any]:
    prefix = "listener.name.external."
    users = " ".join(f'user_{name}="{pw}"' for name, pw in PASSWORDS.items())
    config: dict[str, Any] = {
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT"
        ),
        f"{prefix}sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        f"{prefix}plain.sasl.jaas.config": (
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
        ),
        f"{prefix}scram-sha-256.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
    }
    if acls:
        config |= {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            # The harness's own listeners are PLAINTEXT (principal ANONYMOUS).
            "super.users": "User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false",
        }
    return config


def _start(acls: bool, workdir: Path) -> KafkaCluster:
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    cluster = KafkaCluster(
        nodes=1, heap="320m", broker_config=_broker_config(acls), workdir=workdir
    )
    if acls:  # clients dial it directly: it advertises where it is
        for node in cluster.nodes.values():
            node.external_host = "127.0.0.1"
    cluster.start()
    try:
        admin = cluster.admin()
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
        upserts = [
            UserScramCredentialUpsertion(n, info, pw.encode()) for n, pw in PASSWORDS.items()
        ]
        for future in admin.alter_user_scram_credentials(upserts).values():
            future.result(30)
        for topic in TOPICS:
            cluster.create_topic(topic, 1, 1)
        if acls:
            _acls(cluster)
    except BaseException:
        cluster.close()
        raise
    return cluster


def _acls(cluster: KafkaCluster) -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType
    from confluent_kafka.admin import ResourcePatternType as Pattern
    from confluent_kafka.admin import ResourceType as Kind

    allow = AclPermissionType.ALLOW
    bindings = [
        AclBinding(
            Kind.TOPIC, "auth-", Pattern.PREFIXED, "User:alice", "*", AclOperation.ALL, allow
        ),
        AclBinding(
            Kind.GROUP, "alice-", Pattern.PREFIXED, "User:alice", "*", AclOperation.READ, allow
        ),
        AclBinding(
            Kind.TOPIC, "auth-shared", Pattern.LITERAL, "User:bob", "*", AclOperation.WRITE, allow
        ),
    ]
    for future in cluster.admin().create_acls(bindings).values():
        future.result(30)


@pytest.fixture(scope="module")
def acl_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    with _start(True, tmp_path_factory.mktemp("acl-kafka")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def open_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    with _start(False, tmp_path_factory.mktemp("open-kafka")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def kproxy(
    open_kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    proc = KproxyProcess(
        tmp_path_factory.mktemp("kproxy"),
        open_kafka.external_bootstrap.split(","),
        cluster={
            "dial_overrides": open_kafka.dial_overrides,
            "sasl": {"mechanism": "PLAIN", "username": "kproxy", "password": "kproxy-secret"},
        },
    )
    proc.config["listeners"]["authorization"] = RULES
    with proc:
        yield proc


def sasl(user: str) -> dict[str, Any]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": MECHANISMS[user],
        "sasl.username": user,
        "sasl.password": PASSWORDS[user],
    }


# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: a new
# group's coordinator is not ready yet; asked again.
NOT_READY = (14, 15, 16)


def _code(future: Any) -> int:
    try:
        future.result(30)
    except Exception as exc:
        return int(exc.args[0].code())
    return 0


def _settled(call: Any) -> dict[str, int]:
    """Each entity's code from `call()` (a dict of futures), asked again while a
    coordinator is not ready."""
    deadline = time.monotonic() + 30
    while True:
        codes = {name: _code(future) for name, future in call().items()}
        if not set(codes.values()) & set(NOT_READY) or time.monotonic() > deadline:
            return codes


def _produced(bootstrap: str, user: str) -> dict[str, int]:
    """Each topic's delivery outcome: 0, or the error code the producer reports."""
    from confluent_kafka import Producer

    outcome: dict[str, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        outcome[msg.topic()] = 0 if err is None else int(err.code())

    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 20000, **sasl(user)})
    for topic in TOPICS:
        producer.produce(topic, b"one", on_delivery=delivered)
    producer.flush(30)
    return outcome


def _consumed(bootstrap: str, user: str, topic: str, group: str) -> int:
    """0 once a record arrives, else the first error the consumer reports."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            **sasl(user),
        }
    )
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                return 0 if msg.error() is None else int(msg.error().code())
        return -1
    finally:
        consumer.close()


def _admin_steps(bootstrap: str, user: str) -> dict[str, Any]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap, **sasl(user)})
    seen: dict[str, Any] = {}
    listed = admin.list_topics(timeout=30).topics
    seen["metadata"] = sorted(t for t in listed if not t.startswith("__"))
    described = admin.list_topics(topic="other-x", timeout=30).topics["other-x"]
    seen["metadata other-x"] = described.error.code() if described.error else 0
    new = [NewTopic(f"auth-new-{user}", 1, 1), NewTopic(f"other-new-{user}", 1, 1)]
    seen["create"] = {t: _code(f) for t, f in admin.create_topics(new).items()}
    for group in (f"alice-{user}", f"other-{user}"):
        offsets = ConsumerGroupTopicPartitions(group, [TopicPartition("auth-a", 0, 0)])
        seen[f"commit {group}"] = _settled(
            lambda o=offsets: admin.alter_consumer_group_offsets([o])
        )
    groups = [f"alice-{user}", f"other-{user}"]
    seen["describe groups"] = _settled(lambda: admin.describe_consumer_groups(groups))
    configs = [ConfigResource(ResourceType.TOPIC, t) for t in ("auth-a", "other-x")]
    seen["describe configs"] = {
        r.name: _code(f) for r, f in admin.describe_configs(configs).items()
    }
    retention = ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
    altered = [
        ConfigResource(ResourceType.TOPIC, t, incremental_configs=[retention])
        for t in ("auth-a", "other-x")
    ]
    seen["alter configs"] = {
        r.name: _code(f) for r, f in admin.incremental_alter_configs(altered).items()
    }
    deleted = admin.delete_topics([f"auth-new-{user}", "other-x"])
    seen["delete"] = {t: _code(f) for t, f in deleted.items()}
    return seen


def _old_versions(bootstrap: str, user: str) -> dict[str, Any]:
    """kafka-python speaking Kafka 1.0's versions (Metadata v5, Produce v5: not flexible)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        api_version=(1, 0, 0),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=user,
        sasl_plain_password=PASSWORDS[user],
        max_block_ms=10000,
    )
    outcome: dict[str, Any] = {}
    try:
        for topic in ("auth-a", "other-x"):
            try:
                producer.send(topic, b"old").get(timeout=20)
                outcome[topic] = "ok"
            except Exception as exc:
                outcome[topic] = type(exc).__name__
    finally:
        producer.close(timeout=5)
    return outcome


def _batch(value: bytes) -> bytes:
    """One record in a magic-2 batch, its CRC-32C computed: the broker checks it."""
    import crc32c

    # Attributes, timestamp and offset deltas 0, no key (-1), the value, no header.
    record = b"\x00\x00\x00\x01" + bytes([2 * len(value)]) + value + b"\x00"
    record = bytes([2 * len(record)]) + record  # the record's length, as a varint
    t = 1_700_000_000_000
    after_crc = struct.pack(">hiqqqhii", 0, 0, t, t, -1, -1, -1, 1) + record
    after_length = struct.pack(">ibI", -1, 2, crc32c.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def _call(sock: socket.socket, msg: Any, corr: int, cls: type) -> Any:
    sock.sendall(encode_request_frame(msg, corr, "kio-client"))
    size = struct.unpack(">i", _read(sock, 4))[0]
    got, answer = decode_response_frame(cls, struct.pack(">i", size) + _read(sock, size))
    assert got == corr
    return answer


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "the connection closed"
        data += chunk
    return data


def _one_produce_two_topics(bootstrap: str, user: str) -> list[tuple[str, int]]:
    """A Produce naming an allowed and a refused topic in one request: no client library
    sends one (each asks Metadata first, and a refused topic never gets that far), so
    this one is built by kio, after a SASL PLAIN exchange."""
    from kio.schema.produce.v9 import request as produce
    from kio.schema.produce.v9 import response as produced
    from kio.schema.sasl_authenticate.v2 import request as authenticate
    from kio.schema.sasl_authenticate.v2 import response as authenticated
    from kio.schema.sasl_handshake.v1 import request as handshake
    from kio.schema.sasl_handshake.v1 import response as handshaken
    from kio.static.primitive import Records

    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        _call(
            sock,
            handshake.SaslHandshakeRequest(mechanism="PLAIN"),
            1,
            handshaken.SaslHandshakeResponse,
        )
        token = b"\x00" + user.encode() + b"\x00" + PASSWORDS[user].encode()
        done = _call(
            sock,
            authenticate.SaslAuthenticateRequest(auth_bytes=token),
            2,
            authenticated.SaslAuthenticateResponse,
        )
        assert done.error_code.value == 0
        request = produce.ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout=datetime.timedelta(seconds=20),
            topic_data=tuple(
                produce.TopicProduceData(
                    name=topic,
                    partition_data=(
                        produce.PartitionProduceData(index=0, records=Records(_batch(b"mixed"))),
                    ),
                )
                for topic in ("other-x", "auth-a")
            ),
        )
        answer = _call(sock, request, 3, produced.ProduceResponse)
    # Per entity: a broker lists the topics its ACLs refuse in its own (hash) order.
    return sorted(
        (t.name, p.error_code.value) for t in answer.responses for p in t.partition_responses
    )


def _java_admin(kafka: KafkaCluster, bootstrap: str, user: str, workdir: Path) -> dict[str, Any]:
    """The Java AdminClient (kafka-topics.sh): the topics it lists, and how creating a
    refused topic fails."""
    properties = workdir / f"{user}.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{PASSWORDS[user]}";\n'
    )
    common = ("--bootstrap-server", bootstrap, "--command-config", str(properties))
    listed = kafka.java_tool(MAIN_TOPIC_COMMAND, *common, "--list", timeout=120)
    created = kafka.java_tool(
        MAIN_TOPIC_COMMAND, *common, "--create", "--topic", f"other-java-{user}",
        "--partitions", "1", "--replication-factor", "1", check=False, timeout=120,
    )  # fmt: skip
    return {
        "java list": sorted(t for t in listed.stdout.split() if not t.startswith("__")),
        "java create refused": "TopicAuthorizationException" in created.stdout + created.stderr,
    }


def scenario(bootstrap: str, user: str) -> dict[str, Any]:
    """What one principal's clients see, entity by entity."""
    seen = {"produce": _produced(bootstrap, user)}
    seen |= _admin_steps(bootstrap, user)
    seen["consume alice-group"] = _consumed(bootstrap, user, "auth-a", f"alice-c-{user}")
    seen["consume other-group"] = _consumed(bootstrap, user, "auth-a", f"other-c-{user}")
    seen["old versions"] = _old_versions(bootstrap, user)
    seen["one produce, two topics"] = _one_produce_two_topics(bootstrap, user)
    return seen


@pytest.mark.parametrize("user", ["alice", "bob"])
def test_clients_see_through_kproxy_what_a_broker_with_the_same_acls_answers(
    user: str, acl_kafka: KafkaCluster, kproxy: KproxyProcess, tmp_path: Path
) -> None:
    direct = scenario(acl_kafka.external_bootstrap, user)
    through = scenario(kproxy.bootstrap, user)
    assert through == direct
    java_direct = _java_admin(acl_kafka, acl_kafka.external_bootstrap, user, tmp_path)
    assert _java_admin(acl_kafka, kproxy.bootstrap, user, tmp_path) == java_direct
    assert java_direct["java create refused"]
    # The rules were at work: something was refused, and said so.
    assert 29 in direct["create"].values() or 29 in direct["produce"].values()
    assert kproxy.metric("kproxy_audit_records_total", action="refuse", outcome="refused") > 0


def test_a_reload_changes_the_rules_for_established_connections(kproxy: KproxyProcess) -> None:
    """bob's producer, connected while `auth-a` is refused to him, can write it once a
    reload allows it, on the connections it already has."""
    from confluent_kafka import Producer

    from tests.peers.net import wait_until

    outcome: list[int] = []

    def delivered(err: Any, _msg: Any) -> None:
        outcome.append(0 if err is None else int(err.code()))

    producer = Producer({"bootstrap.servers": kproxy.bootstrap, **sasl("bob")})
    producer.produce("auth-shared", b"connect", on_delivery=delivered)
    producer.flush(30)
    assert outcome == [0]
    applied = kproxy.metric("kproxy_config_reloads_total", result="applied")
    wider = {
        **RULES,
        "rules": [
            *RULES["rules"],
            {"effect": "allow", "principals": ["User:bob"], "topics": ["auth-a"]},
        ],
    }
    kproxy.reload_with({"listeners": {"authorization": wider}})
    wait_until(
        lambda: kproxy.metric("kproxy_config_reloads_total", result="applied") > applied,
        30,
        what="the reload",
    )
    producer.produce("auth-a", b"allowed now", on_delivery=delivered)
    producer.flush(30)
    assert outcome == [0, 0]
    kproxy.reload_with({"listeners": {"authorization": RULES}})
