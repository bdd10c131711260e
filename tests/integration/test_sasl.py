"""A SASL cluster behind kproxy: real Apache Kafka whose client listener is SASL_SSL
with PLAIN, SCRAM-SHA-256 and OAUTHBEARER (the broker's unsecured JWT validator), ACLs
enforced by the StandardAuthorizer and re-authentication every few seconds (KIP-368).
kproxy originates the TLS (certificates made at test time, names checked); clients
speak SASL over plaintext to kproxy on loopback, as an application next to a sidecar
does, and authenticate for themselves through it. kproxy's own discovery authenticates
with `cluster.sasl`, or without it learns the brokers from the answers it relays.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.event_files import read_lines
from tests.java_perf import java_produce
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import wait_until
from tests.tls_material import TlsMaterial

pytestmark = [pytest.mark.peers, pytest.mark.slow]

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "kproxy": "kproxy-secret"}
REAUTH_MS = 2000
TOPIC = "sasl-data"
MESSAGES = 300


def _jaas_plain() -> str:
    users = " ".join(f'user_{name}="{pw}"' for name, pw in PASSWORDS.items())
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return TlsMaterial(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def kafka(certs: TlsMaterial, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    prefix = "listener.name.external."
    config = {
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL"
        ),
        **certs.brokers("kafka.invalid").kafka_keystore(prefix),
        f"{prefix}sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,OAUTHBEARER",
        f"{prefix}plain.sasl.jaas.config": _jaas_plain(),
        f"{prefix}scram-sha-256.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        f"{prefix}oauthbearer.sasl.jaas.config": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
        ),
        "connections.max.reauth.ms": REAUTH_MS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        # The harness's own listeners are PLAINTEXT (principal ANONYMOUS).
        "super.users": "User:ANONYMOUS;User:kproxy",
        "allow.everyone.if.no.acl.found": "false",
    }
    with KafkaCluster(
        nodes=2, heap="384m", broker_config=config, workdir=tmp_path_factory.mktemp("kafka")
    ) as cluster:
        _users_and_acls(cluster)
        cluster.create_topic(TOPIC, 2, 2)
        yield cluster


def _users_and_acls(kafka: KafkaCluster) -> None:
    """SCRAM credentials for every user; alice and bob may use the topics, only alice
    her consumer groups."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = kafka.admin()
    upserts = [
        UserScramCredentialUpsertion(
            name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), pw.encode()
        )
        for name, pw in PASSWORDS.items()
    ]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(30)
    bindings = []
    for user in ("alice", "bob"):
        for op in (AclOperation.ALL,):
            bindings.append(
                AclBinding(
                    ResourceType.TOPIC,
                    "sasl-",
                    ResourcePatternType.PREFIXED,
                    f"User:{user}",
                    "*",
                    op,
                    AclPermissionType.ALLOW,
                )
            )
    bindings.append(
        AclBinding(
            ResourceType.GROUP,
            "alice-",
            ResourcePatternType.PREFIXED,
            "User:alice",
            "*",
            AclOperation.ALL,
            AclPermissionType.ALLOW,
        )
    )
    for future in admin.create_acls(bindings).values():
        future.result(30)


def kproxy_for(tmp: Path, kafka: KafkaCluster, certs: TlsMaterial, **cluster: Any) -> KproxyProcess:
    """kproxy in front of the SASL_SSL listener: TLS to the brokers (their CA, their
    advertised names checked), plaintext to its clients."""
    tls = {"ca": str(certs.cluster_ca_file)}
    return KproxyProcess(
        tmp,
        kafka.external_bootstrap.split(","),
        cluster={"dial_overrides": kafka.dial_overrides, "tls": tls, **cluster},
    )


KPROXY_SASL = {"mechanism": "SCRAM-SHA-256", "username": "kproxy", "password": "kproxy-secret"}


@pytest.fixture(scope="module")
def kproxy(
    kafka: KafkaCluster, certs: TlsMaterial, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    """With `cluster.sasl`: kproxy lists the brokers itself."""
    tmp = tmp_path_factory.mktemp("kproxy")
    proc = kproxy_for(tmp, kafka, certs, sasl=KPROXY_SASL)
    # DeleteRecords refused by kproxy, still advertised: the audit trail's `refuse`.
    proc.config["listeners"]["api_policy"] = {"deny": ["DeleteRecords"], "advertise_denied": True}
    with proc:
        yield proc


def client_sasl(mechanism: str, user: str = "alice", password: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism}
    if mechanism == "OAUTHBEARER":
        conf |= {
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": f"principal={user}",
        }
    else:
        conf |= {"sasl.username": user, "sasl.password": password or PASSWORDS[user]}
    return conf


def roundtrip(bootstrap: str, conf: dict[str, Any], topic: str, group: str) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **conf})
    sent = [f"{group}-{i}".encode() for i in range(MESSAGES)]
    for value in sent:
        producer.produce(topic, value)
    assert producer.flush(60) == 0
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest", **conf}
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len([g for g in got if g in set(sent)]) < MESSAGES:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return [g for g in got if g.startswith(group.encode() + b"-")]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"])
def test_confluent_clients_authenticate_through_kproxy(
    mechanism: str, kafka: KafkaCluster, kproxy: KproxyProcess
) -> None:
    topic = f"sasl-{mechanism.lower()}"
    kafka.create_topic(topic, 2, 2)
    group = f"alice-{mechanism.lower()}"
    got = roundtrip(kproxy.bootstrap, client_sasl(mechanism), topic, group)
    assert sorted(got) == sorted(f"{group}-{i}".encode() for i in range(MESSAGES))


ALICE = 'username="alice" password="alice-secret";'
JAVA_JAAS = {
    "PLAIN": f"org.apache.kafka.common.security.plain.PlainLoginModule required {ALICE}",
    "SCRAM-SHA-256": f"org.apache.kafka.common.security.scram.ScramLoginModule required {ALICE}",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
    'required unsecuredLoginStringClaim_sub="alice";',
}


@pytest.mark.parametrize("mechanism", list(JAVA_JAAS))
def test_the_java_client_authenticates_through_kproxy(
    mechanism: str, kafka: KafkaCluster, kproxy: KproxyProcess, tmp_path: Path
) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.jaas.config={JAVA_JAAS[mechanism]}\n"
    )
    java_produce(kafka, kproxy.bootstrap, TOPIC, MESSAGES, properties)


def test_a_wrong_password_fails_fast(kproxy: KproxyProcess) -> None:
    """The broker's authentication error reaches the client through kproxy at once:
    the client reports it, it does not wait out a timeout."""
    from confluent_kafka import KafkaError, Producer

    errors: list[Any] = []
    producer = Producer(
        {
            "bootstrap.servers": kproxy.bootstrap,
            "error_cb": errors.append,
            **client_sasl("SCRAM-SHA-256", password="wrong"),
        }
    )
    started = time.monotonic()
    wait_until(
        lambda: (
            producer.poll(0.1) is not None
            and any(e.code() == KafkaError._AUTHENTICATION for e in errors)
        ),
        30,
        what="the authentication error",
    )
    assert time.monotonic() - started < 15, "the error took as long as a timeout"


def test_group_authorization_failed_passes_as_it_is(
    kafka: KafkaCluster, kproxy: KproxyProcess
) -> None:
    """bob may read the topic but not use a group: FindCoordinator answers
    GROUP_AUTHORIZATION_FAILED with node -1, which kproxy passes untouched (no ERROR
    log, no unmapped endpoint) and the consumer fails with at once."""
    from confluent_kafka import Consumer, KafkaError, KafkaException

    unmapped_before = kproxy.metric("kproxy_endpoints_unmapped_total", api="FindCoordinator")
    consumer = Consumer(
        {
            "bootstrap.servers": kproxy.bootstrap,
            "group.id": "bob-group",
            "auto.offset.reset": "earliest",
            **client_sasl("PLAIN", "bob"),
        }
    )
    consumer.subscribe([TOPIC])
    seen: list[int] = []

    def refused() -> bool:
        try:
            msg = consumer.poll(0.2)
        except KafkaException as exc:
            seen.append(exc.args[0].code())
            return True
        if msg is not None and msg.error() is not None:
            seen.append(msg.error().code())
        return KafkaError.GROUP_AUTHORIZATION_FAILED in seen

    started = time.monotonic()
    try:
        wait_until(refused, 30, what="GROUP_AUTHORIZATION_FAILED")
    finally:
        consumer.close()
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in seen, seen
    assert time.monotonic() - started < 15
    assert (
        kproxy.metric("kproxy_endpoints_unmapped_total", api="FindCoordinator") == unmapped_before
    )
    assert " ERROR " not in kproxy.log()


def test_reauthentication_mid_connection_loses_nothing(
    kafka: KafkaCluster, kproxy: KproxyProcess
) -> None:
    """The broker makes every connection re-authenticate every REAUTH_MS (KIP-368): the
    client sends SaslHandshake and SaslAuthenticate again on its open connections, and
    kproxy carries them like any request while a producer keeps writing."""
    from confluent_kafka import Producer

    reauth_before = kproxy.metric(
        "kproxy_frames_total", api="SaslAuthenticate", direction="request"
    )
    acked: list[bytes] = []
    failed: list[Any] = []
    producer = Producer(
        {
            "bootstrap.servers": kproxy.bootstrap,
            "acks": "all",
            "linger.ms": 5,
            **client_sasl("SCRAM-SHA-256"),
        }
    )
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set():
            producer.produce(
                TOPIC,
                b"reauth-%d" % i,
                on_delivery=lambda err, msg: (failed if err else acked).append(err or msg.value()),
            )
            i += 1
            producer.poll(0.005)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        wait_until(
            lambda: (
                kproxy.metric("kproxy_frames_total", api="SaslAuthenticate", direction="request")
                >= reauth_before + 8
            ),
            60,
            what="connections to re-authenticate several times",
        )
    finally:
        stop.set()
        writer.join()
    assert producer.flush(60) == 0
    assert not failed, failed[:3]
    assert len(acked) > 100


def test_readiness_with_and_without_credentials(
    kafka: KafkaCluster, kproxy: KproxyProcess, certs: TlsMaterial, tmp_path: Path
) -> None:
    """With `cluster.sasl` kproxy lists every broker before any client asks; without it
    the ApiVersions probe proves the cluster reachable (ready), one WARNING says why
    kproxy cannot list the brokers, and the brokers come from the answers clients get;
    a wrong password is a failed authentication, counted."""
    wait_until(lambda: kproxy.admin_get("/readyz")[0] == 200, 30, what="ready with sasl")
    # Ready comes with the ApiVersions answer, the brokers with the Metadata after it.
    wait_until(
        lambda: {n["id"] for n in kproxy.topology()["nodes"]} == set(kafka.nodes),
        30,
        what="every broker listed before any client asks",
    )

    kafka.create_topic("sasl-bare", 2, 2)
    (tmp_path / "bare").mkdir()
    (tmp_path / "wrong").mkdir()
    with kproxy_for(tmp_path / "bare", kafka, certs) as bare:
        wait_until(lambda: bare.admin_get("/readyz")[0] == 200, 30, what="ready without sasl")
        # The WARNING comes a round trip after ready, when the broker closes the
        # Metadata request that follows ApiVersions.
        wait_until(lambda: "no cluster.sasl?" in bare.log(), 30, what="the WARNING on why")
        assert bare.log().count("no cluster.sasl?") == 1
        assert bare.topology()["nodes"] == []
        got = roundtrip(bare.bootstrap, client_sasl("PLAIN"), "sasl-bare", "alice-bare")
        assert len(got) == MESSAGES
        assert {n["id"] for n in bare.topology()["nodes"]} == set(kafka.nodes)

    wrong = {**KPROXY_SASL, "password": "wr0ng-pass-77"}
    with kproxy_for(tmp_path / "wrong", kafka, certs, sasl=wrong) as bad:
        wait_until(
            lambda: bad.metric("kproxy_upstream_connect_failures_total", reason="sasl") >= 1,
            30,
            what="the failed authentication counted",
        )
        assert "authentication failed: SCRAM-SHA-256:" in bad.log()
        assert "wr0ng-pass-77" not in bad.log()


# -- who is calling (kproxy.session.identity) ------------------------------------------------


def authentications(kproxy: KproxyProcess, client_id: str) -> list[dict[str, Any]]:
    """The `audit` events of one client id's SASL exchanges, in the order written."""
    return [
        line
        for line in read_lines(kproxy.tmp / "events")
        if line["type"] == "audit"
        and line["action"] == "authenticate"
        and line["client_id"] == client_id
    ]


def first_authentication(kproxy: KproxyProcess, client_id: str) -> dict[str, Any]:
    found = wait_until(
        lambda: authentications(kproxy, client_id), 30, what=f"{client_id} authenticated"
    )
    return found[0]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"])
def test_each_mechanism_names_its_principal(mechanism: str, kproxy: KproxyProcess) -> None:
    """The name read from the client's own tokens, taken once the broker said yes."""
    from confluent_kafka import Producer

    client_id = f"who-{mechanism.lower()}"
    before = kproxy.metric("kproxy_authentications_total", mechanism=mechanism, outcome="success")
    producer = Producer(
        {"bootstrap.servers": kproxy.bootstrap, "client.id": client_id, **client_sasl(mechanism)}
    )
    producer.produce(TOPIC, b"who")
    assert producer.flush(30) == 0
    event = first_authentication(kproxy, client_id)
    assert (event["mechanism"], event["outcome"], event["principal"]) == (
        mechanism,
        "success",
        "User:alice",
    )
    assert event["error_codes"] == [] and event["reauthentication"] is False
    assert event["api"] == "SaslAuthenticate" and event["resources"] == []
    assert event["client_address"] == "127.0.0.1" and event["listener"] == "bootstrap"
    assert (
        kproxy.metric("kproxy_authentications_total", mechanism=mechanism, outcome="success")
        > before
    )
    assert f"authenticated as User:alice ({mechanism})" in kproxy.log()


def test_the_java_client_is_named_too(
    kafka: KafkaCluster, kproxy: KproxyProcess, tmp_path: Path
) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        f"sasl.jaas.config={JAVA_JAAS['SCRAM-SHA-256']}\nclient.id=who-java\n"
    )
    java_produce(kafka, kproxy.bootstrap, TOPIC, 10, properties)
    event = first_authentication(kproxy, "who-java")
    assert (event["outcome"], event["principal"]) == ("success", "User:alice")


def test_a_failed_authentication_stays_anonymous(kproxy: KproxyProcess) -> None:
    """The name the client claimed is reported with the broker's error; the connection's
    principal never becomes it."""
    from confluent_kafka import Producer

    client_id = "who-wrong"
    producer = Producer(
        {
            "bootstrap.servers": kproxy.bootstrap,
            "client.id": client_id,
            "error_cb": lambda _err: None,
            **client_sasl("SCRAM-SHA-256", password="not-alices-secret"),
        }
    )
    producer.poll(0.1)
    event = first_authentication(kproxy, client_id)
    assert (event["outcome"], event["principal"], event["error_codes"]) == (
        "failure",
        "User:alice",
        [58],  # SASL_AUTHENTICATION_FAILED
    )
    assert not [e for e in authentications(kproxy, client_id) if e["outcome"] == "success"]
    assert "failed to authenticate with SCRAM-SHA-256 as User:alice: error 58" in kproxy.log()


def test_re_authentication_keeps_the_principal(kproxy: KproxyProcess) -> None:
    """KIP-368: every REAUTH_MS the client authenticates its connections again."""
    from confluent_kafka import Producer

    client_id = "who-again"
    producer = Producer(
        {"bootstrap.servers": kproxy.bootstrap, "client.id": client_id, **client_sasl("PLAIN")}
    )

    def again() -> list[dict[str, Any]]:
        producer.produce(TOPIC, b"again")
        producer.poll(0.05)
        return [e for e in authentications(kproxy, client_id) if e["reauthentication"]]

    reauthenticated = wait_until(again, 30, what="a re-authentication")
    assert producer.flush(30) == 0
    assert {(e["outcome"], e["principal"]) for e in reauthenticated} == {("success", "User:alice")}


def test_no_secret_reaches_a_log_an_event_or_a_metric(kproxy: KproxyProcess) -> None:
    """Passwords, SCRAM proofs and bearer tokens pass through kproxy and are never
    written: every test of this module has run through this kproxy by now."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": kproxy.bootstrap,
            "client.id": "who-oauth",
            **client_sasl("OAUTHBEARER"),
        }
    )
    producer.produce(TOPIC, b"token")
    assert producer.flush(30) == 0
    first_authentication(kproxy, "who-oauth")
    written = "\n".join(
        [
            kproxy.log(),
            kproxy.metrics_text(),
            *(p.read_text() for p in (kproxy.tmp / "events").glob("events-*.jsonl")),
        ]
    )
    for secret in (*PASSWORDS.values(), "not-alices-secret"):
        assert secret not in written
    assert "eyJ" not in written  # a JWT's header, base64url of '{"'
    assert ",p=" not in written and "n,," not in written  # SCRAM messages


# -- the audit trail (kproxy.session.audit) ------------------------------------------------------

AUDITED = "sasl-audited"
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: a new group's
# coordinator is not ready yet, and the client tries again.
COORDINATOR_NOT_READY = ([14], [15], [16])


def _succeeded(futures: dict[Any, Any]) -> bool:
    """Every future answered without error, partition errors of an offset commit included."""
    try:
        results = [future.result(30) for future in futures.values()]
    except Exception:
        return False
    partitions = [p for r in results for p in getattr(r, "topic_partitions", None) or ()]
    return all(p.error is None for p in partitions)


def audit_records(kproxy: KproxyProcess, client_id: str) -> list[tuple[Any, ...]]:
    """The `change` and `refuse` records of one client id, in the order written."""
    return [
        (
            line["action"],
            line["principal"],
            line["api"],
            line["resources"],
            line["outcome"],
            line["failed"],
            line["error_codes"],
        )
        for line in read_lines(kproxy.tmp / "events")
        if line["type"] == "audit"
        and line["action"] != "authenticate"
        and line["client_id"] == client_id
    ]


def test_a_scripted_admin_sequence_is_the_audit_trail(
    kproxy: KproxyProcess, tmp_path: Path
) -> None:
    """alice (ACLs: every operation on `sasl-*` topics and `alice-*` groups) runs a
    sequence of admin operations through kproxy; the audit records equal the expected
    list exactly, and `kproxy analyze` reports them."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        ResourceType,
    )

    client_id = "audit-ops"
    admin = AdminClient(
        {"bootstrap.servers": kproxy.bootstrap, "client.id": client_id, **client_sasl("PLAIN")}
    )

    def settle(futures: dict[Any, Any]) -> None:
        _succeeded(futures)  # the failures are the point: the trail says them

    settle(admin.create_topics([NewTopic(AUDITED, 1, 1)]))
    settle(admin.create_topics([NewTopic(AUDITED, 1, 1)]))  # exists: TOPIC_ALREADY_EXISTS
    settle(admin.create_topics([NewTopic("audit-forbidden", 1, 1)]))  # no ACL: 29
    retention = ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
    settle(
        admin.incremental_alter_configs(
            [ConfigResource(ResourceType.TOPIC, AUDITED, incremental_configs=[retention])]
        )
    )
    settle(admin.create_partitions([NewPartitions(AUDITED, 2)]))
    offsets = ConsumerGroupTopicPartitions("alice-audit", [TopicPartition(AUDITED, 0, 0)])
    # A new group's coordinator may not be ready at first: tried again, and each such
    # answer is a record of its own (dropped below).
    deadline = time.monotonic() + 60
    while not _succeeded(admin.alter_consumer_group_offsets([offsets])):
        assert time.monotonic() < deadline, "the offsets were never committed"
    while not _succeeded(admin.delete_consumer_groups(["alice-audit"])):
        assert time.monotonic() < deadline, "the group was never deleted"
    settle(admin.delete_records([TopicPartition(AUDITED, 0, 0)]))  # refused by kproxy
    settle(admin.delete_topics([AUDITED]))
    alice, topic = "User:alice", f"topic:{AUDITED}"
    expected = [
        ("change", alice, "CreateTopics", [topic], "success", [], []),
        ("change", alice, "CreateTopics", [topic], "failure", [topic], [36]),
        (
            "change",
            alice,
            "CreateTopics",
            ["topic:audit-forbidden"],
            "failure",
            ["topic:audit-forbidden"],
            [29],
        ),
        ("change", alice, "IncrementalAlterConfigs", [topic], "success", [], []),
        ("change", alice, "CreatePartitions", [topic], "success", [], []),
        ("change", alice, "OffsetCommit", ["group:alice-audit", topic], "success", [], []),
        ("change", alice, "DeleteGroups", ["group:alice-audit"], "success", [], []),
        ("refuse", alice, "DeleteRecords", [topic], "refused", [], []),
        ("change", alice, "DeleteTopics", [topic], "success", [], []),
    ]

    def written() -> list[tuple[Any, ...]] | None:
        got = audit_records(kproxy, client_id)
        got = [r for r in got if r[6] not in COORDINATOR_NOT_READY]
        return got if len(got) >= len(expected) else None

    with contextlib.suppress(TimeoutError):
        wait_until(written, 30, what="the audit records")
    found = [r for r in audit_records(kproxy, client_id) if r[6] not in COORDINATOR_NOT_READY]
    assert found == expected, audit_records(kproxy, client_id)
    assert "CreateTopics by User:alice from client" in kproxy.log()
    assert kproxy.metric("kproxy_audit_records_total", action="change", outcome="failure") >= 2

    from tests.analyze_command import run_analyze

    pytest.importorskip("pyspark")
    out = tmp_path / "report"
    run_analyze([str(kproxy.tmp / "events")], out)
    report = (out / "report.html").read_text(encoding="utf-8")
    section = report.split("<h2>Audit trail</h2>", 1)[1]
    assert "User:alice" in section and topic in section and "DeleteRecords" in section
