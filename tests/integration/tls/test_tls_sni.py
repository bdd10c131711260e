"""SNI: one port, every node by name (config/sni-gateway.yaml), for the Java client
and librdkafka, and a refusal for a name kproxy does not serve.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.tls.clients import MESSAGES, values
from tests.integration.tls.proxies import REPO, handshake_failures
from tests.java_perf import java_consume_count, java_produce
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import wait_until
from tests.tls_material import TlsMaterial

pytestmark = [pytest.mark.peers, pytest.mark.slow]


def sni_names(proxy: KproxyProcess, kafka: KafkaCluster) -> list[str]:
    sni = proxy.config["listeners"]["sni"]
    nodes = [sni["node_host_pattern"].replace("{node_id}", str(n)) for n in kafka.nodes]
    return [sni["bootstrap_host"], *nodes]


def hosts_file(path: Path, names: list[str]) -> Path:
    """Every name at 127.0.0.1, as the wildcard DNS record of a real deployment would."""
    path.write_text("".join(f"127.0.0.1 {name}\n" for name in ["localhost", *names]))
    return path


def sni_bootstrap(proxy: KproxyProcess) -> str:
    return f"{proxy.config['listeners']['sni']['bootstrap_host']}:{proxy.bootstrap_port}"


def test_sni_the_java_client_reaches_every_node_through_one_port(
    kafka: KafkaCluster, certs: TlsMaterial, sni_kproxy: KproxyProcess, tmp_path: Path
) -> None:
    """Names resolved by the JVM's own hosts file (jdk.net.hosts.file); the Java client
    checks kproxy's certificate against each name."""
    topic = "tls-sni-java"
    kafka.create_topic(topic, 2, 2)
    hosts = hosts_file(tmp_path / "hosts", sni_names(sni_kproxy, kafka))
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SSL\nssl.truststore.type=PEM\n"
        f"ssl.truststore.location={certs.proxy_ca_file}\n"
    )
    jvm = (f"-Djdk.net.hosts.file={hosts}",)
    bootstrap = sni_bootstrap(sni_kproxy)
    java_produce(kafka, bootstrap, topic, MESSAGES, properties, jvm)
    assert java_consume_count(kafka, bootstrap, topic, MESSAGES, properties, jvm) == MESSAGES
    assert [lst for lst in sni_kproxy.topology()["nodes"] if lst["listener_state"] != "sni"] == []


LIBRDKAFKA_CLIENT = """
import json, sys
sys.path.insert(0, {repo!r})
from tests.integration.tls.clients import confluent_roundtrip
got = confluent_roundtrip({bootstrap!r}, {conf!r}, {topic!r})
print(json.dumps(sorted(v.decode() for v in got)))
"""


def test_sni_librdkafka_reaches_every_node_through_one_port(
    kafka: KafkaCluster, certs: TlsMaterial, sni_kproxy: KproxyProcess, tmp_path: Path
) -> None:
    """librdkafka resolves through the system: it runs in a mount namespace of its own
    whose /etc/hosts names kproxy for every name (nothing outside it changes)."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.fail("needs root and unshare(1) (util-linux) for a private /etc/hosts")
    topic = "tls-sni-librdkafka"
    kafka.create_topic(topic, 2, 2)
    hosts = hosts_file(tmp_path / "hosts", sni_names(sni_kproxy, kafka))
    conf = {
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs.proxy_ca_file),
        "ssl.endpoint.identification.algorithm": "https",
    }
    script = LIBRDKAFKA_CLIENT.format(
        repo=str(REPO), bootstrap=sni_bootstrap(sni_kproxy), conf=conf, topic=topic
    )
    run = subprocess.run(
        [
            "unshare", "--mount", "--propagation", "private", "sh", "-c",
            f'mount --bind "{hosts}" /etc/hosts && exec "{sys.executable}" -c "$0"',
            script,
        ],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout.splitlines()[-1]) == sorted(
        v.decode() for v in values(MESSAGES, topic)
    )
    assert (
        sni_kproxy.metric(
            "kproxy_tls_handshake_failures_total", side="client", reason="unknown_server_name"
        )
        == 0
    )


def test_sni_refuses_an_unknown_or_missing_name(
    certs: TlsMaterial, sni_kproxy: KproxyProcess
) -> None:
    context = ssl.create_default_context(cafile=str(certs.proxy_ca_file))
    context.check_hostname = False
    before = handshake_failures(sni_kproxy, "client", "unknown_server_name")
    for name in ("kafka.example.org", "broker-x.kafka.example.com", None):
        sock = socket.create_connection(("127.0.0.1", sni_kproxy.bootstrap_port), timeout=10)
        with pytest.raises(ssl.SSLError, match="UNRECOGNIZED_NAME"):
            context.wrap_socket(sock, server_hostname=name)
        sock.close()
    wait_until(
        lambda: handshake_failures(sni_kproxy, "client", "unknown_server_name") == before + 3,
        10,
        what="three refusals counted",
    )
    assert "TLS handshake failed (unknown_server_name)" in sni_kproxy.log()
