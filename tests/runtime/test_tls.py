"""kproxy's TLS pieces without sockets: the settings, the contexts they build, the
sans-IO server layer (driven by an `ssl.SSLObject` client over memory buffers), the
failure labels and the reload from disk."""

from __future__ import annotations

import contextlib
import ssl
from pathlib import Path

import pytest

from kproxy.config.settings import ConfigError, parse_config
from kproxy.config.tls import ListenerTlsSettings
from kproxy.runtime.tls import (
    FAILURE_REASONS,
    ServerTls,
    TlsServerLayer,
    TlsSetupError,
    client_context,
    failure_reason,
    server_context,
)
from tests.raw_kafka import metadata_v1
from tests.tls_material import PemPair, TlsMaterial


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return TlsMaterial(tmp_path_factory.mktemp("certs"))


def settings(pair: PemPair, **extra: object) -> ListenerTlsSettings:
    return ListenerTlsSettings.model_validate(
        {"certificate": str(pair.certificate), "key": str(pair.key), **extra}
    )


class Client:
    """A TLS client over memory buffers, to drive the server layer byte by byte."""

    def __init__(self, certs: TlsMaterial, pair: PemPair | None) -> None:
        ctx = ssl.create_default_context(cafile=str(certs.proxy_ca_file))
        if pair is not None:
            ctx.load_cert_chain(str(pair.certificate), str(pair.key))
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.incoming, self.outgoing, server_hostname="127.0.0.1")

    def handshake(self, server: TlsServerLayer) -> tuple[bool, ssl.SSLError | None]:
        """Run the handshake to its end: (client done, the server's failure)."""
        for _ in range(10):
            try:
                self.tls.do_handshake()
                done = True
            except ssl.SSLWantReadError:
                done = False
            received = server.receive(self.outgoing.read())
            self.incoming.write(received.to_peer)
            if received.failure is not None:
                return done, received.failure
            if done and server.established:
                return True, None
        raise AssertionError("the handshake did not end")


def test_a_request_and_its_answer_cross_the_layer(certs: TlsMaterial) -> None:
    server = TlsServerLayer(server_context(settings(certs.proxy())))
    client = Client(certs, None)
    assert client.handshake(server) == (True, None)
    request = metadata_v1(5)
    client.tls.write(request)
    wire = client.outgoing.read()
    # Split anywhere: the plaintext comes out whole, in order, once.
    plain = b"".join(server.receive(wire[i : i + 7]).plaintext for i in range(0, len(wire), 7))
    assert plain == request
    client.incoming.write(server.send([b"ans", memoryview(b"wer")]))
    assert client.tls.read() == b"answer"
    assert server.receive(b"") == (b"", b"", None, False)


def test_records_split_anywhere_come_out_whole_in_order(certs: TlsMaterial) -> None:
    """A small request, one that takes two records (16 KiB each at most) and another
    small one, cut in two at many points: inside a header, inside a record whose rest is
    shorter than its plaintext (so that OpenSSL holds decrypted bytes between reads),
    on record boundaries."""
    messages = [metadata_v1(3), bytes(range(256)) * 100, b"tail"]
    for cut in [1, 5, 6, 100, 16_400, 16_430, 16_500, *range(0, 26_000, 251)]:
        server = TlsServerLayer(server_context(settings(certs.proxy())))
        client = Client(certs, None)
        client.handshake(server)
        for message in messages:
            client.tls.write(message)
        wire = client.outgoing.read()
        first, second = server.receive(wire[:cut]), server.receive(wire[cut:])
        assert first.failure is None and second.failure is None
        assert first.plaintext + second.plaintext == b"".join(messages), cut
        assert not first.closed and not second.closed


def test_kproxy_closes_with_close_notify(certs: TlsMaterial) -> None:
    server = TlsServerLayer(server_context(settings(certs.proxy())))
    assert server.close() == b""  # before the handshake there is nothing to say
    client = Client(certs, None)
    client.handshake(server)
    client.incoming.write(server.close())
    assert client.tls.read() == b""  # a clean end, not a ragged EOF


def test_close_notify_is_a_close(certs: TlsMaterial) -> None:
    server = TlsServerLayer(server_context(settings(certs.proxy())))
    client = Client(certs, None)
    client.handshake(server)
    with contextlib.suppress(ssl.SSLWantReadError):
        client.tls.unwrap()
    assert server.receive(client.outgoing.read()).closed


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("none", "no_certificate"),
        ("stranger", "untrusted_certificate"),
        ("expired", "certificate_expired"),
    ],
)
def test_mtls_failures_are_named_and_answered_with_an_alert(
    certs: TlsMaterial, case: str, reason: str
) -> None:
    pair = {
        "none": None,
        "stranger": certs.client("s", ca=certs.stranger_ca),
        "expired": certs.client("e", expired=True),
    }[case]
    tls = settings(certs.proxy(), client_ca=str(certs.proxy_ca_file))
    assert tls.effective_client_auth == "required"
    server = TlsServerLayer(server_context(tls))
    client = Client(certs, pair)
    _, failure = client.handshake(server)
    assert failure is not None
    assert failure_reason(failure) == reason
    # The alert went to the client: its next read fails instead of hanging.
    with pytest.raises(ssl.SSLError):
        client.tls.read()


def test_optional_client_auth_lets_a_client_without_a_certificate_in(
    certs: TlsMaterial,
) -> None:
    tls = settings(certs.proxy(), client_ca=str(certs.proxy_ca_file), client_auth="optional")
    server = TlsServerLayer(server_context(tls))
    assert Client(certs, None).handshake(server) == (True, None)


def test_plaintext_kafka_is_not_tls(certs: TlsMaterial) -> None:
    server = TlsServerLayer(server_context(settings(certs.proxy())))
    failure = server.receive(metadata_v1(1)).failure
    assert failure is not None
    assert failure_reason(failure) == "not_tls"


def test_failure_labels_are_bounded() -> None:
    for exc in (TimeoutError(), ConnectionResetError(), ValueError("?"), ssl.SSLError(1, "x")):
        assert failure_reason(exc) in FAILURE_REASONS
    aborted = ConnectionAbortedError("SSL handshake is taking longer than 10 seconds")
    assert failure_reason(aborted) == "timeout"


def test_a_reload_serves_the_new_files_and_a_broken_one_changes_nothing(
    certs: TlsMaterial, tmp_path: Path
) -> None:
    first, second = certs.proxy("one"), certs.proxy("two")
    live = PemPair(tmp_path / "c.pem", tmp_path / "k.pem")
    live.certificate.write_bytes(first.certificate.read_bytes())
    live.key.write_bytes(first.key.read_bytes())
    tls = ServerTls(settings(live))
    assert not tls.changed_on_disk()
    original = tls.context
    staged = tmp_path / "staged.pem"
    staged.write_bytes(second.certificate.read_bytes())
    staged.replace(live.certificate)
    live.key.write_bytes(second.key.read_bytes())
    assert tls.changed_on_disk()
    tls.reload()
    assert tls.context is not original and not tls.changed_on_disk()
    renewed = tls.context
    live.certificate.write_text("garbage\n")
    with pytest.raises(TlsSetupError, match=r"listeners.tls: cannot load certificate .*c\.pem"):
        tls.reload()
    assert tls.context is renewed
    assert tls.changed_on_disk()
    tls.mark_seen()
    assert not tls.changed_on_disk()


def test_a_missing_file_is_named(tmp_path: Path, certs: TlsMaterial) -> None:
    pair = certs.proxy()
    with pytest.raises(TlsSetupError, match=r"cannot load CA file /nowhere/ca\.pem"):
        server_context(settings(pair, client_ca="/nowhere/ca.pem"))
    bad = parse_config(
        {"cluster": {"bootstrap_servers": ["b:9092"], "tls": {"ca": str(tmp_path / "no.pem")}}}
    )
    assert bad.cluster.tls is not None
    with pytest.raises(TlsSetupError, match=r"cluster.tls.ca: cannot load CA file .*no\.pem"):
        client_context(bad.cluster.tls)


def test_broker_side_context_verifies_by_default(certs: TlsMaterial) -> None:
    cfg = parse_config({"cluster": {"bootstrap_servers": ["b:9092"], "tls": {}}})
    assert cfg.cluster.tls is not None
    ctx = client_context(cfg.cluster.tls)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    relaxed = parse_config(
        {
            "cluster": {
                "bootstrap_servers": ["b:9092"],
                "tls": {"ca": str(certs.cluster_ca_file), "verify_hostname": False},
            }
        }
    )
    assert relaxed.cluster.tls is not None
    ctx = client_context(relaxed.cluster.tls)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and not ctx.check_hostname


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (
            {"listeners": {"tls": {"certificate": "c.pem"}}},
            "listeners.tls.key: ",
        ),
        (
            {"listeners": {"tls": {"certificate": "c", "key": "k", "client_auth": "required"}}},
            "listeners.tls.client_auth: required needs client_ca",
        ),
        (
            {"listeners": {"tls": {"certificate": "c", "key": "k", "min_version": "1.1"}}},
            "listeners.tls.min_version: ",
        ),
        (
            {"listeners": {"sni": {"bootstrap_host": "b.x", "node_host_pattern": "n{node_id}"}}},
            "listeners.sni: needs listeners.tls",
        ),
        (
            {
                "listeners": {
                    "tls": {"certificate": "c", "key": "k"},
                    "sni": {"bootstrap_host": "b.x", "node_host_pattern": "node.x"},
                }
            },
            "listeners.sni.node_host_pattern: must contain {node_id} once",
        ),
        (
            {
                "listeners": {
                    "tls": {"certificate": "c", "key": "k"},
                    "sni": {"bootstrap_host": "b.x", "node_host_pattern": "n {node_id}.x"},
                }
            },
            "listeners.sni.node_host_pattern: must be a host name",
        ),
        (
            {"cluster": {"bootstrap_servers": ["b:1"], "tls": {"certificate": "c"}}},
            "cluster.tls.key: certificate and key go together",
        ),
        (
            {"cluster": {"bootstrap_servers": ["b:1"], "tls": {"verify": False}}},
            "cluster.tls.verify: unknown key",
        ),
    ],
)
def test_bad_tls_settings_are_named(section: dict[str, object], message: str) -> None:
    data: dict[str, object] = {"cluster": {"bootstrap_servers": ["b:1"]}, **section}
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert str(err.value).startswith(message), str(err.value)


def test_key_password_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, certs: TlsMaterial
) -> None:
    monkeypatch.setenv("KPROXY_TEST_KEY_PASSWORD", "s3cret")
    cfg = parse_config(
        {
            "cluster": {"bootstrap_servers": ["b:1"]},
            "listeners": {
                "tls": {
                    "certificate": "c",
                    "key": "k",
                    "key_password": {"env": "KPROXY_TEST_KEY_PASSWORD"},
                }
            },
        }
    )
    assert cfg.listeners.tls is not None and cfg.listeners.tls.key_password is not None
    assert cfg.listeners.tls.key_password.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(cfg)


def test_check_config_says_what_tls_each_side_speaks() -> None:
    from kproxy.cli import tls_summary
    from kproxy.config.settings import load_config

    repo = Path(__file__).resolve().parents[2]
    assert tls_summary(load_config(repo / "config" / "tls-gateway.yaml")) == [
        "  clients    TLS 1.2+, client certificate required",
        "  brokers    TLS 1.2+, names verified, client certificate",
    ]
    assert tls_summary(load_config(repo / "config" / "gateway.yaml")) == []


def test_sni_names_map_to_nodes_and_back() -> None:
    from kproxy.runtime.mapping import AddressMap

    cfg = parse_config(
        {
            "cluster": {"bootstrap_servers": ["b:1"]},
            "listeners": {
                "tls": {"certificate": "c", "key": "k"},
                "sni": {
                    "bootstrap_host": "kafka.example.com",
                    "node_host_pattern": "b-{node_id}.kafka.example.com",
                },
            },
        }
    )
    addresses = AddressMap(cfg.cluster, cfg.listeners)
    assert addresses.kproxy_address(3) is None  # the port is not bound yet
    addresses.bootstrap_bound(9093)
    assert addresses.kproxy_address(3) == ("b-3.kafka.example.com", 9093)
    assert addresses.is_mappable(123456) and not addresses.needs_listener(5)
    assert addresses.sni_target("Kafka.Example.com.") == (True, None)
    assert addresses.sni_target("b-17.kafka.example.com") == (True, 17)
    for unknown in (
        "b-.kafka.example.com",
        "b-01.kafka.example.com",
        "b-9999999999.kafka.example.com",
        "x.example.com",
        None,
    ):
        assert addresses.sni_target(unknown) == (False, None), unknown
    addresses.learn(17, "broker-17.internal", 9092, True)
    assert addresses.cluster_address("b-17.kafka.example.com", 9093) == ("broker-17.internal", 9092)
    assert addresses.cluster_address("b-17.kafka.example.com", 1) == ("b-17.kafka.example.com", 1)


def test_an_encrypted_key_loads_with_its_password(certs: TlsMaterial, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    pair = certs.proxy("locked")
    private = serialization.load_pem_private_key(pair.key.read_bytes(), None)
    locked = tmp_path / "locked-key.pem"
    locked.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"open sesame"),
        )
    )
    with_password = settings(PemPair(pair.certificate, locked), key_password="open sesame")
    server = TlsServerLayer(server_context(with_password))
    assert Client(certs, None).handshake(server) == (True, None)
    wrong = settings(PemPair(pair.certificate, locked), key_password="wrong")
    with pytest.raises(TlsSetupError, match=r"listeners\.tls: cannot load certificate"):
        server_context(wrong)


def test_a_client_below_the_minimum_version_is_refused(certs: TlsMaterial) -> None:
    server = TlsServerLayer(server_context(settings(certs.proxy(), min_version="1.3")))
    client = Client(certs, None)
    old = ssl.create_default_context(cafile=str(certs.proxy_ca_file))
    old.maximum_version = ssl.TLSVersion.TLSv1_2
    client.tls = old.wrap_bio(client.incoming, client.outgoing, server_hostname="127.0.0.1")
    _, failure = client.handshake(server)
    assert failure is not None
    assert failure_reason(failure) == "protocol_version"
