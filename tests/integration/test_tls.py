"""TLS on both sides of kproxy, against real Apache Kafka with certificates made at test time.

The cluster's client listener speaks TLS only and requires a client certificate (mTLS),
signed by the cluster's CA; its certificate names `*.kafka.invalid`, names no client can
resolve. kproxy dials the brokers with its own client certificate, checks theirs against
the name each broker advertises (while it dials 127.0.0.1 through `dial_overrides`), and
serves clients either over TLS with its own certificate (client certificates required,
from kproxy's CA) or in plaintext (the sidecar case). Every client checks kproxy's
certificate against the address it dialled.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.test_leak_hunt import LogLines, assert_no_leak
from tests.java_perf import java_consume_count, java_produce
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import wait_until
from tests.raw_kafka import closed_by_peer, metadata_v1, read_frame
from tests.tls_material import PemPair, TlsMaterial, kafka_truststore

pytestmark = [pytest.mark.peers, pytest.mark.slow]

DOMAIN = "kafka.invalid"
MESSAGES = 300


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return TlsMaterial(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
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


REPO = Path(__file__).resolve().parents[2]


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


@pytest.fixture(scope="module")
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


@pytest.fixture(scope="module")
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


# -- clients ------------------------------------------------------------------------------


class ClientTls:
    """How one client reaches kproxy: TLS with a client certificate, or plaintext."""

    def __init__(self, certs: TlsMaterial, tls: bool) -> None:
        self.tls = tls
        self.ca = certs.proxy_ca_file
        self.pair = certs.client("app") if tls else None

    def confluent(self) -> dict[str, Any]:
        if self.pair is None:
            return {}
        return {
            "security.protocol": "SSL",
            "ssl.ca.location": str(self.ca),
            "ssl.certificate.location": str(self.pair.certificate),
            "ssl.key.location": str(self.pair.key),
            "ssl.endpoint.identification.algorithm": "https",
        }

    def kafka_python(self) -> dict[str, Any]:
        if self.pair is None:
            return {}
        return {
            "security_protocol": "SSL",
            "ssl_cafile": str(self.ca),
            "ssl_certfile": str(self.pair.certificate),
            "ssl_keyfile": str(self.pair.key),
            "ssl_check_hostname": True,
        }

    def aiokafka(self) -> dict[str, Any]:
        if self.pair is None:
            return {}
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.pair.certificate), str(self.pair.key))
        return {"security_protocol": "SSL", "ssl_context": context}

    def java_properties(self, path: Path) -> Path:
        lines = []
        if self.pair is not None:
            settings = {
                "security.protocol": "SSL",
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.ca),
                "ssl.endpoint.identification.algorithm": "https",
                **self.pair.kafka_keystore(""),
            }
            lines = [f"{k}={v}" for k, v in settings.items()]
        path.write_text("\n".join(lines) + "\n")
        return path


def values(count: int, tag: str) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(count)]


def confluent_roundtrip(bootstrap: str, conf: dict[str, Any], topic: str) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **conf})
    for value in values(MESSAGES, topic):
        producer.produce(topic, value)
    assert producer.flush(60) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            **conf,
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        wait_until(lambda: _poll_into(consumer, got), 60, what="confluent to read every message")
    finally:
        consumer.close()
    return got


def _poll_into(consumer: Any, got: list[bytes]) -> bool:
    msg = consumer.poll(0.5)
    if msg is not None and msg.error() is None:
        got.append(msg.value())
    return len(got) >= MESSAGES


def kafka_python_roundtrip(bootstrap: str, conf: dict[str, Any], topic: str) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", **conf)
    for value in values(MESSAGES, topic):
        producer.send(topic, value)
    producer.flush(60)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
        consumer_timeout_ms=30_000,
        **conf,
    )
    got = [msg.value for _, msg in zip(range(MESSAGES), consumer, strict=False)]
    consumer.close()
    return got


def aiokafka_roundtrip(bootstrap: str, conf: dict[str, Any], topic: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", **conf)
        await producer.start()
        try:
            for value in values(MESSAGES, topic):
                await producer.send(topic, value)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=f"g-{topic}",
            auto_offset_reset="earliest",
            **conf,
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                async for msg in consumer:
                    got.append(msg.value)
                    if len(got) >= MESSAGES:
                        break
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


CLIENTS: dict[str, Callable[..., list[bytes]]] = {
    "confluent": confluent_roundtrip,
    "kafka-python": kafka_python_roundtrip,
    "aiokafka": aiokafka_roundtrip,
}


@pytest.mark.parametrize("client", [*CLIENTS, "java"])
@pytest.mark.parametrize("side", ["tls", "plaintext"])
def test_clients_produce_and_consume_exactly(
    client: str,
    side: str,
    kafka: KafkaCluster,
    certs: TlsMaterial,
    tls_kproxy: KproxyProcess,
    plain_kproxy: KproxyProcess,
    tmp_path: Path,
) -> None:
    """Each client, with hostname verification on, writes MESSAGES records through kproxy
    to the TLS-only cluster and reads exactly those back."""
    proxy = tls_kproxy if side == "tls" else plain_kproxy
    topic = f"tls-{side}-{client}"
    kafka.create_topic(topic, 2, 2)
    how = ClientTls(certs, side == "tls")
    if client == "java":
        properties = how.java_properties(tmp_path / "client.properties")
        java_produce(kafka, proxy.bootstrap, topic, MESSAGES, properties)
        assert java_consume_count(kafka, proxy.bootstrap, topic, MESSAGES, properties) == MESSAGES
    else:
        settings = {
            "confluent": how.confluent,
            "kafka-python": how.kafka_python,
            "aiokafka": how.aiokafka,
        }[client]()
        got = CLIENTS[client](proxy.bootstrap, settings, topic)
        assert sorted(got) == sorted(values(MESSAGES, topic))
    assert proxy.metric("kproxy_upstream_connect_failures_total", reason="tls") == 0


# -- mTLS and bad input towards clients ----------------------------------------------------


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


# -- towards the brokers -------------------------------------------------------------------


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
    is still checked) and the start says what was given up."""
    tls = cluster_tls(certs, verify_hostname=False)
    with KproxyProcess(
        tmp_path, kafka.external_real_bootstrap.split(","), cluster={"tls": tls}
    ) as proxy:
        wait_until(lambda: proxy.admin_get("/readyz")[0] == 200, 30, what="the cluster reached")
        assert "cluster.tls.verify_hostname is false" in proxy.log()


# -- certificate reload --------------------------------------------------------------------


def served_serial(port: int, certs: TlsMaterial, pair: PemPair) -> int:
    with tls_client(port, certs, pair) as sock:
        der = sock.getpeercert(binary_form=True)
    assert der is not None
    from cryptography import x509

    return x509.load_der_x509_certificate(der).serial_number


def test_certificates_reload_without_dropping_connections(
    kafka: KafkaCluster, certs: TlsMaterial, tmp_path: Path
) -> None:
    """A renewed certificate (the files replaced, as a mounted Secret is) serves new
    connections at once; an established connection keeps working; files that cannot be
    loaded leave the running certificate in place (SIGHUP and the file check alike)."""
    first = certs.proxy("reload-1")
    live = PemPair(tmp_path / "live.pem", tmp_path / "live-key.pem")
    shutil.copy(first.certificate, live.certificate)
    shutil.copy(first.key, live.key)
    client = certs.client("reloader")
    with KproxyProcess(
        tmp_path,
        kafka.external_bootstrap.split(","),
        cluster={"dial_overrides": kafka.dial_overrides, "tls": cluster_tls(certs)},
        listeners={"tls": listener_tls(live, certs, reload_check_seconds=0.2)},
    ) as proxy:
        port = proxy.bootstrap_port
        first_serial = served_serial(port, certs, client)
        with tls_client(port, certs, client) as established:
            assert metadata_answered(established)
            second = certs.proxy("reload-2")
            for src, dst in ((second.key, live.key), (second.certificate, live.certificate)):
                staged = dst.with_suffix(f".{uuid.uuid4().hex}")
                shutil.copy(src, staged)
                staged.replace(dst)  # renamed in: a new inode, as the kubelet swaps files
            wait_until(
                lambda: served_serial(port, certs, client) != first_serial,
                15,
                what="the renewed certificate served",
            )
            second_serial = served_serial(port, certs, client)
            assert metadata_answered(established)

            live.certificate.write_text("not a certificate\n")
            proxy.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
            wait_until(
                lambda: proxy.metric("kproxy_tls_reloads_total", result="failure") >= 1,
                15,
                what="the failed reload counted",
            )
            assert "the running ones stay" in proxy.log()
            assert served_serial(port, certs, client) == second_serial
            assert metadata_answered(established)
        assert proxy.metric("kproxy_tls_reloads_total", result="success") >= 1
        assert handshake_failures(proxy, "client", "other") == 0


# -- SNI: one port, every node by name -----------------------------------------------------


@pytest.fixture(scope="module")
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
from tests.integration.test_tls import confluent_roundtrip
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


# -- the leak hunt over TLS ----------------------------------------------------------------


def test_no_broker_address_reaches_a_tls_client_through_leader_churn(
    kafka: KafkaCluster, certs: TlsMaterial, tls_kproxy: KproxyProcess
) -> None:
    """An idempotent producer and a consumer over TLS while leadership moves for real
    (reassignments and elections, the KIP-951 redirects of Produce and Fetch): every
    acknowledged record is read back, and the clients' own logs (librdkafka's broker
    debug lines) never name a broker's address or a port that is not kproxy's."""
    from confluent_kafka import Consumer, Producer

    topic = "tls-churn"
    kafka.create_topic(topic, 4, 2)
    tls = ClientTls(certs, True).confluent()
    producer_log, consumer_log = LogLines("tls-churn-producer"), LogLines("tls-churn-consumer")
    producer = Producer(
        {
            "bootstrap.servers": tls_kproxy.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "debug": "broker",
            "logger": producer_log.logger,
            **tls,
        }
    )
    acked: list[bytes] = []
    failed: list[object] = []
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set():
            try:
                producer.produce(
                    topic,
                    b"%d" % i,
                    on_delivery=lambda err, msg: (failed if err else acked).append(
                        err or msg.value()
                    ),
                )
                i += 1
            except BufferError:
                pass
            producer.poll(0.002)

    changes_before = tls_kproxy.metric("kproxy_leader_changes_total", source_api="Metadata")
    writer = threading.Thread(target=write)
    writer.start()
    try:
        wait_until(lambda: len(acked) > 1000, 60, what="the producer to get going")
        kafka.rotate_leaders(topic, 4)
        count = len(acked)
        wait_until(lambda: len(acked) > count + 1000, 60, what="writing after the moves")
    finally:
        stop.set()
        writer.join()
    assert producer.flush(60) == 0
    assert not failed, failed[:3]
    consumer = Consumer(
        {
            "bootstrap.servers": tls_kproxy.bootstrap,
            "group.id": "tls-churn",
            "auto.offset.reset": "earliest",
            "debug": "broker",
            "logger": consumer_log.logger,
            **tls,
        }
    )
    consumer.subscribe([topic])
    read: set[bytes] = set()
    try:
        wait_until(lambda: _poll_set(consumer, read) >= set(acked), 90, what="every acked record")
    finally:
        consumer.close()
    assert_no_leak([producer_log, consumer_log], tls_kproxy)
    moved = sum(
        tls_kproxy.metric("kproxy_leader_changes_total", source_api=api)
        for api in ("Metadata", "Produce", "Fetch")
    )
    assert moved > changes_before, "no leader change went through kproxy"


def _poll_set(consumer: Any, read: set[bytes]) -> set[bytes]:
    for msg in consumer.consume(1000, 0.5):
        if msg.error() is None:
            read.add(msg.value())
    return read
