"""kproxy's authorization rules against real Kafka ACLs as the oracle.

Two single-node Kafka clusters with SASL_SSL listeners (PLAIN for alice, SCRAM-SHA-256
for bob; certificates made at test time): one enforces ACLs with the StandardAuthorizer,
the other allows everything and sits behind kproxy, whose `listeners.authorization`
rules say what the ACLs say. The same client operations
(`tests/integration/acl_clients.py`: confluent-kafka's producer, consumer and
AdminClient, kafka-python speaking old, non-flexible versions, the Java AdminClient,
producer and consumer, and a kio-built Produce naming two topics) run (a) directly
against the ACL cluster and (b) through kproxy: the error each client sees, entity by
entity, and the topics each principal's Metadata lists, are equal. alice by her client
certificate (mTLS) sees the same through a second kproxy, which maps her certificate's
subject, as on an mTLS listener of the ACL cluster, which maps it by the same rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.acl_clients import (
    TOPICS,
    Caller,
    java_clients,
    sasl_caller,
    scenario,
    tls_caller,
)
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import free_ports
from tests.tls_material import PemPair, TlsMaterial, kafka_truststore

pytestmark = [pytest.mark.peers, pytest.mark.slow]

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "kproxy": "kproxy-secret"}
MECHANISMS = {"alice": "PLAIN", "bob": "SCRAM-SHA-256"}
# What the ACLs say, as kproxy rules: alice may do anything to `auth-*` topics and her
# `alice-tx*` transactional ids, and read her `alice-*` groups; bob may write
# `auth-shared` only.
# Kafka's ssl.principal.mapping.rules syntax: CN=alice,... names User:alice.
CERTIFICATE_RULE = "RULE:^CN=([^,]+).*$/$1/"
RULES: dict[str, Any] = {
    "rules": [
        {"effect": "allow", "principals": ["User:alice"], "topics": ["auth-*"]},
        {
            "effect": "allow",
            "principals": ["User:alice"],
            "groups": ["alice-*"],
            "operations": ["read"],
        },
        {"effect": "allow", "principals": ["User:alice"], "transactional_ids": ["alice-tx*"]},
        {
            "effect": "allow",
            "principals": ["User:bob"],
            "topics": ["auth-shared"],
            "operations": ["write"],
        },
    ],
    "default": "deny",
}


def _broker_config(acls: bool, certificate: PemPair) -> dict[str, Any]:
    prefix = "listener.name.external."
    users = " ".join(f'user_{name}="{pw}"' for name, pw in PASSWORDS.items())
    config: dict[str, Any] = {
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL"
        ),
        **certificate.kafka_keystore(prefix),
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


def _mtls_listener(cluster: KafkaCluster, port: int, certs: TlsMaterial, pair: PemPair) -> None:
    """A fourth listener, SSL with client certificates required: CN=alice names
    User:alice, by the same rule kproxy's listener maps certificates with."""
    (node,) = cluster.nodes.values()
    prefix = "listener.name.mtls."
    cluster.broker_config |= {
        "listeners": (
            f"CONTROLLER://127.0.0.1:{node.controller_port},"
            f"INTERNAL://127.0.0.1:{node.internal_port},"
            f"EXTERNAL://127.0.0.1:{node.external_port},MTLS://127.0.0.1:{port}"
        ),
        "advertised.listeners": (
            f"INTERNAL://127.0.0.1:{node.internal_port},"
            f"EXTERNAL://127.0.0.1:{node.external_port},MTLS://127.0.0.1:{port}"
        ),
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL,MTLS:SSL"
        ),
        **pair.kafka_keystore(prefix),
        **kafka_truststore(certs.proxy_ca_file, prefix),
        f"{prefix}ssl.client.auth": "required",
        f"{prefix}ssl.principal.mapping.rules": f"{CERTIFICATE_RULE},DEFAULT",
    }


def _start(
    acls: bool, workdir: Path, certs: TlsMaterial, mtls_port: int | None = None
) -> KafkaCluster:
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    # Clients dial the ACL cluster directly: it advertises where it is, and its
    # certificate says so; kproxy dials the other by its advertised names.
    certificate = (
        certs.issue(certs.cluster_ca, "acl-broker", "127.0.0.1")
        if acls
        else certs.brokers("kafka.invalid")
    )
    config = _broker_config(acls, certificate)
    cluster = KafkaCluster(nodes=1, heap="320m", broker_config=config, workdir=workdir)
    if acls:
        for node in cluster.nodes.values():
            node.external_host = "127.0.0.1"
    if mtls_port is not None:
        _mtls_listener(cluster, mtls_port, certs, certificate)
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
        AclBinding(
            Kind.TRANSACTIONAL_ID,
            "alice-tx",
            Pattern.PREFIXED,
            "User:alice",
            "*",
            AclOperation.ALL,
            allow,
        ),
    ]
    for future in cluster.admin().create_acls(bindings).values():
        future.result(30)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return TlsMaterial(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def mtls_port() -> int:
    """The ACL cluster's listener for client certificates."""
    return free_ports(1)[0]


@pytest.fixture(scope="module")
def acl_kafka(
    certs: TlsMaterial, mtls_port: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaCluster]:
    with _start(True, tmp_path_factory.mktemp("acl-kafka"), certs, mtls_port) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def open_kafka(
    certs: TlsMaterial, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaCluster]:
    with _start(False, tmp_path_factory.mktemp("open-kafka"), certs) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def kproxy(
    open_kafka: KafkaCluster, certs: TlsMaterial, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    """In front of the open cluster's SASL_SSL listener: TLS to it, plaintext to its
    clients, who authenticate through it."""
    proc = KproxyProcess(
        tmp_path_factory.mktemp("kproxy"),
        open_kafka.external_bootstrap.split(","),
        cluster={
            "dial_overrides": open_kafka.dial_overrides,
            "tls": {"ca": str(certs.cluster_ca_file)},
            "sasl": {"mechanism": "PLAIN", "username": "kproxy", "password": "kproxy-secret"},
        },
    )
    proc.config["listeners"]["authorization"] = RULES
    with proc:
        yield proc


@pytest.fixture(scope="module")
def tls_kproxy(
    open_kafka: KafkaCluster, certs: TlsMaterial, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    """kproxy whose clients present certificates (CN=alice names User:alice), in front
    of the open cluster's plaintext listener: the same rules, another way of naming."""
    proxy = certs.proxy()
    proc = KproxyProcess(
        tmp_path_factory.mktemp("tls-kproxy"),
        open_kafka.internal_bootstrap.split(","),
        listeners={
            "tls": {
                "certificate": str(proxy.certificate),
                "key": str(proxy.key),
                "client_ca": str(certs.proxy_ca_file),
            },
            "authorization": RULES,
        },
        principals={"tls_mapping_rules": [CERTIFICATE_RULE]},
    )
    with proc:
        yield proc


def caller(user: str, ca_file: Path | None = None) -> Caller:
    """`user`'s clients by SASL: over TLS checked against `ca_file` (the ACL cluster's
    SASL_SSL listener) or in plaintext (kproxy's listener)."""
    return sasl_caller(user, PASSWORDS[user], MECHANISMS[user], ca_file)


def compared(
    acl_kafka: KafkaCluster,
    direct: Caller,
    proxy: KproxyProcess,
    through: Caller,
    tmp: Path,
    bootstrap: str | None = None,
) -> dict[str, Any]:
    """One principal's clients, directly against the ACLs (at `bootstrap`, else the
    SASL_SSL listener) and through kproxy's rules: equal, entity by entity. What the
    direct clients saw."""
    direct_bootstrap = bootstrap or acl_kafka.external_bootstrap
    seen = scenario(direct_bootstrap, direct)
    assert scenario(proxy.bootstrap, through) == seen
    java = java_clients(acl_kafka, direct_bootstrap, direct, tmp)
    assert java_clients(acl_kafka, proxy.bootstrap, through, tmp) == java
    assert java["java create refused"]
    assert any(line.endswith(" ok") for line in java["java clients"])
    return seen


@pytest.mark.parametrize("user", ["alice", "bob"])
def test_clients_see_through_kproxy_what_a_broker_with_the_same_acls_answers(
    user: str,
    acl_kafka: KafkaCluster,
    kproxy: KproxyProcess,
    certs: TlsMaterial,
    tmp_path: Path,
) -> None:
    direct = caller(user, certs.cluster_ca_file)
    seen = compared(acl_kafka, direct, kproxy, caller(user), tmp_path)
    # The rules were at work: something was refused, and said so.
    assert 29 in seen["create"].values() or 29 in seen["produce"].values()
    assert kproxy.metric("kproxy_audit_records_total", action="refuse", outcome="refused") > 0


def test_a_certificate_principal_is_held_to_the_same_rules(
    acl_kafka: KafkaCluster,
    mtls_port: int,
    tls_kproxy: KproxyProcess,
    certs: TlsMaterial,
    tmp_path: Path,
) -> None:
    """alice by her client certificate: through kproxy (which maps its subject) she sees
    what she sees on the ACL cluster's mTLS listener (which maps it the same way)."""
    pair = certs.issue(certs.proxy_ca, "alice", "alice.clients.invalid", common_name="alice")
    direct = tls_caller("alice", certs.cluster_ca_file, pair)
    through = tls_caller("alice", certs.proxy_ca_file, pair)
    seen = compared(acl_kafka, direct, tls_kproxy, through, tmp_path, f"127.0.0.1:{mtls_port}")
    assert seen["metadata"] == ["auth-a", "auth-shared"]
    assert seen["create"][f"other-new-{through.tag}"] == 29


def test_a_reload_changes_the_rules_for_established_connections(kproxy: KproxyProcess) -> None:
    """bob's producer, connected while `auth-a` is refused to him, can write it once a
    reload allows it, on the connections it already has."""
    from confluent_kafka import Producer

    from tests.peers.net import wait_until

    outcome: list[int] = []

    def delivered(err: Any, _msg: Any) -> None:
        outcome.append(0 if err is None else int(err.code()))

    producer = Producer({"bootstrap.servers": kproxy.bootstrap, **caller("bob").confluent})
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
