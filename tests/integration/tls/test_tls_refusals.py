"""What kproxy refuses over TLS, each with a log line and a metric: clients without a
valid certificate, plaintext on a TLS port, a stalled handshake; and towards the
brokers another CA, a name the certificate does not carry, no client certificate.
Turning hostname verification off is said at start.
"""

from __future__ import annotations

import re
import socket
import ssl
from pathlib import Path

import pytest

from tests.integration.tls.proxies import (
    cluster_tls,
    handshake_failures,
    metadata_answered,
    tls_client,
)
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import wait_until
from tests.raw_kafka import closed_by_peer, metadata_v1
from tests.tls_material import TlsMaterial

pytestmark = [pytest.mark.peers, pytest.mark.slow]


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("no certificate", "no_certificate"),
        ("another CA", "untrusted_certificate"),
        ("expired", "certificate_expired"),
    ],
)
def test_mtls_refuses_a_client_without_a_valid_certificate(
    case: str, reason: str, certs: TlsMaterial, tls_kproxy: KproxyProcess
) -> None:
    pair = {
        "no certificate": None,
        "another CA": certs.client("stranger", ca=certs.stranger_ca),
        "expired": certs.client("late", expired=True),
    }[case]
    before = handshake_failures(tls_kproxy, "client", reason)
    try:
        sock = tls_client(tls_kproxy.bootstrap_port, certs, pair)
    except (ssl.SSLError, ConnectionError):
        pass  # TLS 1.2 refuses during the handshake; 1.3 at the first read below
    else:
        with sock:
            assert not metadata_answered(sock)
    wait_until(
        lambda: handshake_failures(tls_kproxy, "client", reason) == before + 1,
        10,
        what=f"the refusal counted as {reason}",
    )
    assert re.search(rf"TLS handshake failed \({reason}\)", tls_kproxy.log())
    # A valid certificate passes, on the same listener, at the same time.
    with tls_client(tls_kproxy.bootstrap_port, certs, certs.client("valid")) as good:
        assert metadata_answered(good)


def test_plaintext_to_a_tls_port_and_a_stalled_handshake(
    certs: TlsMaterial, tls_kproxy: KproxyProcess
) -> None:
    """A Kafka request in plaintext on the TLS port, and a client that never finishes its
    handshake: each closed with a log line and a metric; other clients keep working."""
    with tls_client(tls_kproxy.bootstrap_port, certs, certs.client("bystander")) as bystander:
        assert metadata_answered(bystander)
        before = handshake_failures(tls_kproxy, "client", "not_tls")
        with socket.create_connection(("127.0.0.1", tls_kproxy.bootstrap_port), 10) as plain:
            plain.sendall(metadata_v1(1))
            assert closed_by_peer(plain)
        assert handshake_failures(tls_kproxy, "client", "not_tls") == before + 1

        stalled_before = handshake_failures(tls_kproxy, "client", "timeout")
        with socket.create_connection(("127.0.0.1", tls_kproxy.bootstrap_port), 10) as stall:
            stall.sendall(b"\x16\x03\x01")  # the start of a ClientHello, then nothing
            assert closed_by_peer(stall, timeout=15)  # limits.first_request_timeout_seconds
        assert handshake_failures(tls_kproxy, "client", "timeout") == stalled_before + 1
        assert "TLS handshake not finished within" in tls_kproxy.log()
        assert metadata_answered(bystander)


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("another CA", "untrusted_certificate"),
        ("real address", "hostname_mismatch"),
        ("no client certificate", "refused_by_peer"),
    ],
)
def test_broker_side_failures_are_named(
    case: str, reason: str, kafka: KafkaCluster, certs: TlsMaterial, tmp_path: Path
) -> None:
    """kproxy trusting another CA, dialling by a name the certificate does not carry, or
    without the client certificate the brokers require: discovery fails with a log line
    and a metric, and /readyz says the cluster was not reached."""
    tls = cluster_tls(certs)
    bootstrap = kafka.external_bootstrap.split(",")
    if case == "another CA":
        tls["ca"] = str(certs.stranger_ca_file)
    elif case == "real address":
        bootstrap = kafka.external_real_bootstrap.split(",")
    else:
        del tls["certificate"], tls["key"]
    with KproxyProcess(
        tmp_path, bootstrap, cluster={"dial_overrides": kafka.dial_overrides, "tls": tls}
    ) as proxy:
        wait_until(
            lambda: handshake_failures(proxy, "upstream", reason) >= 1,
            30,
            what=f"an upstream TLS failure counted as {reason}",
        )
        assert proxy.admin_get("/readyz")[0] == 503
        assert "metadata from 127.0.0.1:" in proxy.log()


def test_hostname_verification_can_be_turned_off_loudly(
    kafka: KafkaCluster, certs: TlsMaterial, tmp_path: Path
) -> None:
    """Dialled by real address with verify_hostname false: the cluster is reached (the CA
    is still checked) and the start says what was given up. Its brokers advertise names
    this host cannot resolve, and no dial override maps them: kproxy is not ready, and
    says why and what maps them."""
    tls = cluster_tls(certs, verify_hostname=False)
    with KproxyProcess(
        tmp_path, kafka.external_real_bootstrap.split(","), cluster={"tls": tls}
    ) as proxy:
        wait_until(lambda: proxy.metric("kproxy_cluster_reached") == 1, 30, what="the cluster")
        assert "cluster.tls.verify_hostname is false" in proxy.log()
        wait_until(
            lambda: b"set cluster.dial_overrides" in proxy.admin_get("/readyz")[1],
            30,
            what="readiness naming cluster.dial_overrides",
        )
        assert proxy.admin_get("/readyz")[0] == 503
        assert "map each to an address this host can dial with cluster.dial_overrides" in (
            proxy.log()
        )
