"""mTLS names the principal: a client certificate's subject (RFC 2253, as a Kafka broker
reads it) mapped by `principals.tls_mapping_rules`; a subject no rule maps is refused,
as a broker refuses it, with a log line and its own close cause."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.event_files import read_lines
from tests.integration.tls.proxies import (
    cluster_tls,
    kproxy_for,
    listener_tls,
    metadata_answered,
    tls_client,
)
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import wait_until
from tests.tls_material import PemPair, TlsMaterial

pytestmark = [pytest.mark.peers, pytest.mark.slow]

RULES = [r"RULE:^CN=([^,]+),OU=payments,.*$/$1/L", r"RULE:^CN=([^,]+),OU=ops,.*$/ops-$1/"]


@pytest.fixture(scope="module")
def mapping_kproxy(
    kafka: KafkaCluster, certs: TlsMaterial, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    proc = kproxy_for(
        tmp_path_factory.mktemp("principal-kproxy"),
        kafka,
        {"tls": cluster_tls(certs)},
        listeners={"tls": listener_tls(certs.proxy(), certs)},
        principals={"tls_mapping_rules": RULES},
    )
    with proc:
        yield proc


def client_cert(certs: TlsMaterial, name: str, unit: str) -> PemPair:
    leaf = certs.issue(
        certs.proxy_ca,
        name,
        f"{name}.clients.invalid",
        common_name=name,
        organization_unit_name=unit,
    )
    return leaf


def closes(proc: KproxyProcess) -> list[dict[str, Any]]:
    return [
        line
        for line in read_lines(Path(proc.tmp) / "events")
        if line["type"] == "connection" and line["action"] == "close"
    ]


@pytest.mark.parametrize(
    ("name", "unit", "principal"),
    [("Alice", "payments", "User:alice"), ("Bob", "ops", "User:ops-Bob")],
)
def test_a_certificate_subject_names_the_principal(
    name: str, unit: str, principal: str, certs: TlsMaterial, mapping_kproxy: KproxyProcess
) -> None:
    before = len(closes(mapping_kproxy))
    with tls_client(mapping_kproxy.bootstrap_port, certs, client_cert(certs, name, unit)) as sock:
        assert metadata_answered(sock)
    # (The harness's own probe of the port, a connection without TLS, may close too.)
    wait_until(
        lambda: principal in [c["principal"] for c in closes(mapping_kproxy)[before:]],
        20,
        what=f"the connection closed as {principal}",
    )


def test_a_subject_no_rule_maps_is_refused(
    certs: TlsMaterial, mapping_kproxy: KproxyProcess
) -> None:
    before = mapping_kproxy.metric("kproxy_connections_closed_total", cause="principal_unmapped")
    with tls_client(
        mapping_kproxy.bootstrap_port, certs, client_cert(certs, "Eve", "sales")
    ) as sock:
        assert not metadata_answered(sock)
    wait_until(
        lambda: (
            mapping_kproxy.metric("kproxy_connections_closed_total", cause="principal_unmapped")
            == before + 1
        ),
        20,
        what="the refusal counted",
    )
    assert "no principals.tls_mapping_rules rule matches its certificate subject" in (
        mapping_kproxy.log()
    )
    assert "CN=Eve,OU=sales,O=trustme" in mapping_kproxy.log()


def test_without_rules_the_principal_is_the_whole_subject(
    certs: TlsMaterial, tls_kproxy: KproxyProcess
) -> None:
    """The shipped gateway example sets no rules: DEFAULT, as a broker's default."""
    before = len(closes(tls_kproxy))
    pair = client_cert(certs, "carol", "payments")
    with tls_client(tls_kproxy.bootstrap_port, certs, pair) as sock:
        assert metadata_answered(sock)
    wait_until(
        lambda: any(
            c["principal"].startswith("User:CN=carol,OU=payments,O=trustme")
            for c in closes(tls_kproxy)[before:]
        ),
        20,
        what="the connection closed as its subject",
    )
