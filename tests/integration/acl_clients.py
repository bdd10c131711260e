"""The clients of the ACL oracle (tests/integration/test_authorization.py): what one
principal's confluent-kafka producer, consumer and AdminClient, kafka-python (Kafka
1.0's versions), the Java AdminClient, producer and consumer, and a kio-built Produce
see, entity by entity, authenticating by SASL or by a client certificate."""

from __future__ import annotations

import contextlib
import datetime
import multiprocessing
import socket
import ssl
import struct
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.kio_support import decode_response_frame, encode_request_frame
from tests.peers.kafka_cluster import KafkaCluster
from tests.tls_material import PemPair, kafka_truststore
from tests.topic_admin import MAIN_TOPIC_COMMAND

TOPICS = ("auth-a", "auth-shared", "other-x")
PROBE = Path(__file__).resolve().parents[1] / "java" / "AclProbe.java"


@dataclass(frozen=True)
class Caller:
    """One principal's clients: how each authenticates (SASL or a client certificate),
    and the tag its run names its own topics and groups by."""

    user: str
    tag: str
    confluent: dict[str, Any]  # librdkafka's settings
    python: dict[str, Any]  # kafka-python's
    java: str  # the Java clients' properties
    tls: ssl.SSLContext | None = None  # the kio client's TLS, if any
    password: str | None = None  # the kio client's SASL PLAIN password, if any


def sasl_caller(user: str, password: str, mechanism: str, ca_file: Path | None = None) -> Caller:
    """SASL (kafka-python, the Java client and the kio client by PLAIN), over TLS
    checked against `ca_file` when one is given (a SASL_SSL listener)."""
    protocol = "SASL_PLAINTEXT" if ca_file is None else "SASL_SSL"
    confluent = {
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }
    python = {
        "security_protocol": protocol,
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }
    java = {
        "security.protocol": protocol,
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
        f'required username="{user}" password="{password}";',
    }
    context = None
    if ca_file is not None:
        confluent["ssl.ca.location"] = str(ca_file)
        python["ssl_cafile"] = str(ca_file)
        java |= kafka_truststore(ca_file)
        context = ssl.create_default_context(cafile=str(ca_file))
    return Caller(user, user, confluent, python, _properties(java), context, password)


def _properties(values: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def tls_caller(user: str, ca_file: Path, pair: PemPair) -> Caller:
    """A client certificate (CN=user) names the principal: kproxy's listener maps it."""
    context = ssl.create_default_context(cafile=str(ca_file))
    context.load_cert_chain(str(pair.certificate), str(pair.key))
    properties = {
        "security.protocol": "SSL",
        **pair.kafka_keystore(""),
        **kafka_truststore(ca_file),
    }
    return Caller(
        user,
        f"{user}-tls",
        {
            "security.protocol": "SSL",
            "ssl.ca.location": str(ca_file),
            "ssl.certificate.location": str(pair.certificate),
            "ssl.key.location": str(pair.key),
        },
        {
            "security_protocol": "SSL",
            "ssl_cafile": str(ca_file),
            "ssl_certfile": str(pair.certificate),
            "ssl_keyfile": str(pair.key),
        },
        _properties(properties),
        tls=context,
    )


# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: a new
# group's coordinator is not ready yet; asked again.
NOT_READY = (14, 15, 16)


def _code(future: Any) -> int:
    # exception(), not result(): a raised error's traceback would tie the future to the
    # caller's frames and their AdminClient in a cycle that the collector may break on
    # a librdkafka thread, where destroying the client crashes the interpreter.
    error = future.exception(30)
    return 0 if error is None else int(error.args[0].code())


def _settled(call: Any) -> dict[str, int]:
    """Each entity's code from `call()` (a dict of futures), asked again while a
    coordinator is not ready."""
    deadline = time.monotonic() + 30
    while True:
        codes = {name: _code(future) for name, future in call().items()}
        if not set(codes.values()) & set(NOT_READY) or time.monotonic() > deadline:
            return codes


def _partition_codes(call: Any) -> Any:
    """Each partition's error code in an offsets answer of `call()` (a dict of one
    future), or the whole call's, asked again while a coordinator is not ready."""
    deadline = time.monotonic() + 30
    while True:
        (future,) = call().values()
        if future.exception(30) is None:
            answer = future.result()
            return sorted(
                (tp.topic, tp.partition, tp.error.code() if tp.error else 0)
                for tp in answer.topic_partitions
            )
        code = _code(future)
        if code not in NOT_READY or time.monotonic() > deadline:
            return code


def _produced(bootstrap: str, caller: Caller) -> dict[str, int]:
    """Each topic's delivery outcome: 0, or the error code the producer reports."""
    from confluent_kafka import Producer

    outcome: dict[str, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        outcome[msg.topic()] = 0 if err is None else int(err.code())

    producer = Producer(
        {"bootstrap.servers": bootstrap, "message.timeout.ms": 20000, **caller.confluent}
    )
    for topic in TOPICS:
        producer.produce(topic, b"one", on_delivery=delivered)
    producer.flush(30)
    return outcome


def _transactional(bootstrap: str, caller: Caller) -> dict[str, int]:
    """Each transactional id's outcome: a transaction committed (0), or the error."""
    from confluent_kafka import KafkaException, Producer

    outcome: dict[str, int] = {}
    for txn in (f"alice-tx-{caller.tag}", f"other-tx-{caller.tag}"):
        producer = Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": txn, **caller.confluent}
        )
        try:
            producer.init_transactions(30)
            producer.begin_transaction()
            producer.produce("auth-a", b"in a transaction")
            producer.commit_transaction(30)
            outcome[txn] = 0
        except KafkaException as exc:
            outcome[txn] = int(exc.args[0].code())
    return outcome


def _consumed(bootstrap: str, caller: Caller, topic: str, group: str) -> int:
    """0 once a record arrives, else the first error the consumer reports."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            **caller.confluent,
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


def _listed_offsets(bootstrap: str, confluent: dict[str, Any], group: str) -> Any:
    """`group`'s offsets of auth-a and other-x (`_partition_codes`), listed in a child
    process: librdkafka's AdminClient dereferences a consumer group handle it does not
    have when an OffsetFetch is answered NOT_COORDINATOR, which a new group's coordinator
    may answer (confluentinc/librdkafka#5040, open in 2.16), and the crash would take
    the test run with it. Listing only reads, so a crashed child is replaced once."""
    context = multiprocessing.get_context("spawn")
    for attempt in (1, 2):
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            try:
                return pool.submit(_list_offsets, bootstrap, confluent, group).result(120)
            except BrokenProcessPool:
                if attempt == 2:
                    raise
                print("the AdminClient listing offsets crashed (librdkafka#5040): again")
    raise AssertionError("unreachable")


def _list_offsets(bootstrap: str, confluent: dict[str, Any], group: str) -> Any:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, **confluent})
    asked = ConsumerGroupTopicPartitions(
        group, [TopicPartition("auth-a", 0), TopicPartition("other-x", 0)]
    )
    return _partition_codes(lambda: admin.list_consumer_group_offsets([asked]))


def _admin_steps(bootstrap: str, caller: Caller) -> dict[str, Any]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap, **caller.confluent})
    tag = caller.tag
    seen: dict[str, Any] = {}
    listed = admin.list_topics(timeout=30).topics
    seen["metadata"] = sorted(t for t in listed if not t.startswith("__"))
    described = admin.list_topics(topic="other-x", timeout=30).topics["other-x"]
    seen["metadata other-x"] = described.error.code() if described.error else 0
    new = [NewTopic(f"auth-new-{tag}", 1, 1), NewTopic(f"other-new-{tag}", 1, 1)]
    seen["create"] = {t: _code(f) for t, f in admin.create_topics(new).items()}
    for group in (f"alice-{tag}", f"other-{tag}"):
        offsets = ConsumerGroupTopicPartitions(group, [TopicPartition("auth-a", 0, 0)])
        seen[f"commit {group}"] = _settled(
            lambda o=offsets: admin.alter_consumer_group_offsets([o])
        )
    seen["list offsets"] = _listed_offsets(bootstrap, caller.confluent, f"alice-{tag}")
    groups = [f"alice-{tag}", f"other-{tag}"]
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
    deleted = admin.delete_topics([f"auth-new-{tag}", "other-x"])
    seen["delete"] = {t: _code(f) for t, f in deleted.items()}
    return seen


def _old_versions(bootstrap: str, caller: Caller) -> dict[str, Any]:
    """kafka-python speaking Kafka 1.0's versions (Metadata v5, Produce v5: not flexible)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        api_version=(1, 0, 0),
        max_block_ms=10000,
        **caller.python,
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


def _one_produce_two_topics(bootstrap: str, caller: Caller) -> list[tuple[str, int]]:
    """A Produce naming an allowed and a refused topic in one request: no client library
    sends one (each asks Metadata first, and a refused topic never gets that far), so
    this one is built by kio, after a SASL PLAIN exchange, over TLS when the caller
    speaks it."""
    from kio.schema.produce.v9 import request as produce
    from kio.schema.produce.v9 import response as produced
    from kio.schema.sasl_authenticate.v2 import request as authenticate
    from kio.schema.sasl_authenticate.v2 import response as authenticated
    from kio.schema.sasl_handshake.v1 import request as handshake
    from kio.schema.sasl_handshake.v1 import response as handshaken
    from kio.static.primitive import Records

    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with contextlib.ExitStack() as stack:
        sock: socket.socket = stack.enter_context(
            socket.create_connection((host, int(port)), timeout=30)
        )
        if caller.tls is not None:  # with a certificate that says who, or under SASL
            sock = stack.enter_context(caller.tls.wrap_socket(sock, server_hostname=host))
        if caller.password is not None:
            _call(
                sock,
                handshake.SaslHandshakeRequest(mechanism="PLAIN"),
                1,
                handshaken.SaslHandshakeResponse,
            )
            token = b"\x00" + caller.user.encode() + b"\x00" + caller.password.encode()
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


def java_clients(
    kafka: KafkaCluster, bootstrap: str, caller: Caller, workdir: Path
) -> dict[str, Any]:
    """The Java clients: the AdminClient (kafka-topics.sh) listing topics and creating a
    refused one, and the producer and consumer of tests/java/AclProbe.java."""
    properties = workdir / f"{caller.tag}.properties"
    properties.write_text(caller.java)
    common = ("--bootstrap-server", bootstrap, "--command-config", str(properties))
    listed = kafka.java_tool(MAIN_TOPIC_COMMAND, *common, "--list", timeout=120)
    created = kafka.java_tool(
        MAIN_TOPIC_COMMAND, *common, "--create", "--topic", f"other-java-{caller.tag}",
        "--partitions", "1", "--replication-factor", "1", check=False, timeout=120,
    )  # fmt: skip
    probe = kafka.java_client(
        str(PROBE), bootstrap, str(properties), caller.tag, timeout=180, check=False
    )
    assert probe.returncode == 0, f"{probe.stdout}\n{probe.stderr}"[-4000:]
    return {
        "java list": sorted(t for t in listed.stdout.split() if not t.startswith("__")),
        "java create refused": "TopicAuthorizationException" in created.stdout + created.stderr,
        "java clients": [
            line for line in probe.stdout.splitlines() if line.startswith(("produce ", "consume "))
        ],
    }


def scenario(bootstrap: str, caller: Caller) -> dict[str, Any]:
    """What one principal's clients see, entity by entity."""
    tag = caller.tag
    seen = {"produce": _produced(bootstrap, caller)}
    seen |= _admin_steps(bootstrap, caller)
    seen["consume alice-group"] = _consumed(bootstrap, caller, "auth-a", f"alice-c-{tag}")
    seen["consume other-group"] = _consumed(bootstrap, caller, "auth-a", f"other-c-{tag}")
    seen["transactions"] = _transactional(bootstrap, caller)
    seen["old versions"] = _old_versions(bootstrap, caller)
    seen["one produce, two topics"] = _one_produce_two_topics(bootstrap, caller)
    return seen
