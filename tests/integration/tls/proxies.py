"""kproxy in front of the TLS-only test cluster: its `cluster.tls` and `listeners.tls`
(from the shipped examples, their paths replaced by this test's files), and a raw TLS
connection to it that checks its certificate and asks for Metadata.
"""

from __future__ import annotations

import socket
import ssl
from pathlib import Path
from typing import Any

import yaml

from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.raw_kafka import metadata_v1, read_frame
from tests.tls_material import PemPair, TlsMaterial

DOMAIN = "kafka.invalid"


REPO = Path(__file__).resolve().parents[3]


def cluster_tls(certs: TlsMaterial, **extra: Any) -> dict[str, Any]:
    """kproxy's `cluster.tls`: the cluster's CA and kproxy's client certificate."""
    pair = certs.client("kproxy-upstream", ca=certs.cluster_ca)
    return {
        "ca": str(certs.cluster_ca_file),
        "certificate": str(pair.certificate),
        "key": str(pair.key),
        **extra,
    }


def listener_tls(pair: PemPair, certs: TlsMaterial, **extra: Any) -> dict[str, Any]:
    return {
        "certificate": str(pair.certificate),
        "key": str(pair.key),
        "client_ca": str(certs.proxy_ca_file),
        **extra,
    }


def kproxy_for(
    tmp: Path, kafka: KafkaCluster, cluster: dict[str, Any], **sections: Any
) -> KproxyProcess:
    return KproxyProcess(
        tmp,
        kafka.external_bootstrap.split(","),
        cluster={"dial_overrides": kafka.dial_overrides, **cluster},
        **sections,
    )


def example_tls(name: str, files: dict[str, Path]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The `cluster.tls` and `listeners.tls` of a shipped example (`config/NAME`), with
    its file paths replaced by this test's (`files`: example path -> test file); a path
    the test does not know fails, so the example cannot drift from what is tested."""
    doc = yaml.safe_load((REPO / "config" / name).read_text())

    def local(section: dict[str, Any] | None) -> dict[str, Any]:
        return {
            key: str(files[value]) if isinstance(value, str) and value.startswith("/") else value
            for key, value in (section or {}).items()
        }

    return local(doc["cluster"].get("tls")), local(doc["listeners"].get("tls"))


def tls_client(port: int, certs: TlsMaterial, pair: PemPair | None) -> ssl.SSLSocket:
    """A TLS connection to kproxy that checks its certificate; `pair` is the client's."""
    context = ssl.create_default_context(cafile=str(certs.proxy_ca_file))
    if pair is not None:
        context.load_cert_chain(str(pair.certificate), str(pair.key))
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return context.wrap_socket(sock, server_hostname="127.0.0.1")


def metadata_answered(sock: ssl.SSLSocket) -> bool:
    """A Metadata request over `sock`: True if kproxy relayed the broker's answer."""
    try:
        sock.sendall(metadata_v1(11))
        return read_frame(sock)[:4] == (11).to_bytes(4, "big")
    except (ssl.SSLError, ConnectionError, TimeoutError):
        return False


def handshake_failures(proxy: KproxyProcess, side: str, reason: str) -> float:
    return proxy.metric("kproxy_tls_handshake_failures_total", side=side, reason=reason)
