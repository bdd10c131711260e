"""One TLS-only Apache Kafka cluster for this package (mTLS on its client listener,
certificates naming `*.kafka.invalid`), and the kproxies in front of it that the shipped
examples describe: config/tls-gateway.yaml, config/tls-sidecar.yaml and
config/sni-gateway.yaml. Each is started once and shared by the package's modules.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from tests.integration.tls.proxies import DOMAIN, REPO, example_tls, kproxy_for
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.tls_material import TlsMaterial, kafka_truststore


@pytest.fixture(scope="package")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return TlsMaterial(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="package")
def kafka(certs: TlsMaterial, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    brokers = certs.brokers(DOMAIN)
    prefix = "listener.name.external."
    config = {
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:SSL",
        **brokers.kafka_keystore(prefix),
        **kafka_truststore(certs.cluster_ca_file, prefix),
        f"{prefix}ssl.client.auth": "required",
    }
    with KafkaCluster(
        nodes=2, heap="384m", broker_config=config, workdir=tmp_path_factory.mktemp("kafka")
    ) as cluster:
        yield cluster


@pytest.fixture(scope="package")
def tls_kproxy(
    kafka: KafkaCluster, certs: TlsMaterial, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    """config/tls-gateway.yaml: TLS to clients (client certificates required) and to the
    brokers (with kproxy's client certificate)."""
    upstream = certs.client("kproxy-upstream", ca=certs.cluster_ca)
    served = certs.proxy()
    cluster, listener = example_tls(
        "tls-gateway.yaml",
        {
            "/etc/kproxy/tls/cluster-ca.pem": certs.cluster_ca_file,
            "/etc/kproxy/tls/upstream.pem": upstream.certificate,
            "/etc/kproxy/tls/upstream-key.pem": upstream.key,
            "/etc/kproxy/tls/kproxy.pem": served.certificate,
            "/etc/kproxy/tls/kproxy-key.pem": served.key,
            "/etc/kproxy/tls/clients-ca.pem": certs.proxy_ca_file,
        },
    )
    proc = kproxy_for(
        tmp_path_factory.mktemp("tls-kproxy"),
        kafka,
        {"tls": cluster},
        listeners={"tls": listener},
        limits={"first_request_timeout_seconds": 2.0},
    )
    with proc:
        yield proc


@pytest.fixture(scope="package")
def plain_kproxy(
    kafka: KafkaCluster, certs: TlsMaterial, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    """config/tls-sidecar.yaml: plaintext to the application, TLS to the brokers."""
    upstream = certs.client("kproxy-sidecar", ca=certs.cluster_ca)
    cluster, listener = example_tls(
        "tls-sidecar.yaml",
        {
            "/etc/kproxy/tls/ca.crt": certs.cluster_ca_file,
            "/etc/kproxy/tls/tls.crt": upstream.certificate,
            "/etc/kproxy/tls/tls.key": upstream.key,
        },
    )
    assert not listener
    proc = kproxy_for(tmp_path_factory.mktemp("plain-kproxy"), kafka, {"tls": cluster})
    with proc:
        yield proc


@pytest.fixture(scope="package")
def sni_kproxy(
    kafka: KafkaCluster, certs: TlsMaterial, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KproxyProcess]:
    """config/sni-gateway.yaml: its names, served on one port."""
    doc = yaml.safe_load((REPO / "config" / "sni-gateway.yaml").read_text())
    sni = doc["listeners"]["sni"]
    domain = sni["bootstrap_host"]
    served = certs.proxy("sni", domain, f"*.{domain}")
    cluster, listener = example_tls(
        "sni-gateway.yaml",
        {
            "/etc/kproxy/tls/cluster-ca.pem": certs.cluster_ca_file,
            "/etc/kproxy/tls/kproxy.pem": served.certificate,
            "/etc/kproxy/tls/kproxy-key.pem": served.key,
        },
    )
    upstream = certs.client("kproxy-sni", ca=certs.cluster_ca)
    cluster |= {"certificate": str(upstream.certificate), "key": str(upstream.key)}
    with kproxy_for(
        tmp_path_factory.mktemp("sni-kproxy"),
        kafka,
        {"tls": cluster},
        listeners={"tls": listener, "sni": sni},
    ) as proc:
        yield proc
