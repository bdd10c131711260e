"""kproxy's own SASL client: its requests as kio (an independent codec) reads them, its
parsing of kio-encoded answers, and the mechanisms' messages (SCRAM against scramp's
server side, the other end of RFC 5802)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import scramp
from kio.schema.errors import ErrorCode

from kproxy.config.sasl import ClusterSaslSettings
from kproxy.config.settings import ConfigError, parse_config
from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.sasl_messages import (
    api_versions_error,
    api_versions_v0_request,
    sasl_authenticate_answer,
    sasl_authenticate_v1_request,
    sasl_handshake_answer,
    sasl_handshake_v1_request,
)
from kproxy.runtime.sasl import SaslFailed, SaslSession
from tests.kio_build import build
from tests.kio_support import decode_request_frame, encode_response_frame, kio_message_class
from tests.metadata_broker import api_versions_answer


def test_requests_read_back_with_kio() -> None:
    api, version, corr, client, _ = decode_request_frame(api_versions_v0_request(4))
    assert (api, version, corr, client) == (18, 0, 4, "kproxy")
    api, version, corr, _, msg = decode_request_frame(sasl_handshake_v1_request(5, "PLAIN"))
    assert (api, version, corr, msg.mechanism) == (17, 1, 5, "PLAIN")
    api, version, corr, _, msg = decode_request_frame(sasl_authenticate_v1_request(6, b"\0u\0p"))
    assert (api, version, corr, msg.auth_bytes) == (36, 1, 6, b"\0u\0p")


def _body(frame: bytes) -> bytes:
    return frame[4:]  # without the size: what FrameReader hands on


def test_answers_encoded_by_kio_are_read() -> None:
    assert api_versions_error(_body(encode_response_frame(api_versions_answer(0), 1))) == 0
    shake_cls = kio_message_class(17, 1, "response")
    assert shake_cls is not None
    shake = build(
        shake_cls,
        error_code=ErrorCode.unsupported_sasl_mechanism,
        mechanisms=("PLAIN", "SCRAM-SHA-512"),
    )
    assert sasl_handshake_answer(_body(encode_response_frame(shake, 2))) == (
        33,
        ["PLAIN", "SCRAM-SHA-512"],
    )
    auth_cls = kio_message_class(36, 1, "response")
    assert auth_cls is not None
    auth = build(
        auth_cls,
        error_code=ErrorCode.sasl_authentication_failed,
        error_message="Authentication failed: Invalid username or password",
        auth_bytes=b"",
        session_lifetime=datetime.timedelta(milliseconds=0),
    )
    answer = sasl_authenticate_answer(_body(encode_response_frame(auth, 3)))
    assert answer.error_code == 58
    assert answer.error_message == "Authentication failed: Invalid username or password"


@pytest.mark.parametrize("cut", [4, 5, 7, 10])
def test_a_truncated_answer_is_malformed(cut: int) -> None:
    shake_cls = kio_message_class(17, 1, "response")
    assert shake_cls is not None
    frame = _body(
        encode_response_frame(build(shake_cls, error_code=ErrorCode.none, mechanisms=("PLAIN",)), 2)
    )
    with pytest.raises(MalformedMessage):
        sasl_handshake_answer(frame[:cut])


def sasl(**values: object) -> ClusterSaslSettings:
    return ClusterSaslSettings.model_validate(values)


def test_plain_and_oauthbearer_are_one_message() -> None:
    plain = SaslSession(sasl(mechanism="PLAIN", username="alice", password="pw"))
    assert plain.first() == b"\x00alice\x00pw"
    assert plain.next(b"") is None
    bearer = SaslSession(sasl(mechanism="OAUTHBEARER", token="a.b."))
    assert bearer.first() == b"n,,\x01auth=Bearer a.b.\x01\x01"
    assert bearer.next(b"") is None


def test_a_token_file_is_read_at_every_authentication(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first.token.\n")
    settings = sasl(mechanism="OAUTHBEARER", token_file=str(token))
    assert SaslSession(settings).first() == b"n,,\x01auth=Bearer first.token.\x01\x01"
    token.write_text("renewed.token.")
    assert SaslSession(settings).first() == b"n,,\x01auth=Bearer renewed.token.\x01\x01"
    token.unlink()
    with pytest.raises(SaslFailed, match="OAUTHBEARER: cannot read"):
        SaslSession(settings).first()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_completes_against_a_server_that_knows_the_password(mechanism: str) -> None:
    server_mech = scramp.ScramMechanism(mechanism)
    auth_info = server_mech.make_auth_info("s3cret", iteration_count=4096)
    server = server_mech.make_server(lambda username: auth_info)
    client = SaslSession(sasl(mechanism=mechanism, username="alice", password="s3cret"))
    server.set_client_first(client.first().decode())
    final = client.next(server.get_server_first().encode())
    assert final is not None
    server.set_client_final(final.decode())
    assert client.next(server.get_server_final().encode()) is None


def test_scram_refuses_a_server_that_does_not_know_the_password() -> None:
    server_mech = scramp.ScramMechanism("SCRAM-SHA-256")
    auth_info = server_mech.make_auth_info("other", iteration_count=4096)
    server = server_mech.make_server(lambda username: auth_info)
    client = SaslSession(sasl(mechanism="SCRAM-SHA-256", username="alice", password="s3cret"))
    server.set_client_first(client.first().decode())
    final = client.next(server.get_server_first().encode())
    assert final is not None
    with pytest.raises(scramp.ScramException):
        server.set_client_final(final.decode())
    # A forged server-final (its signature cannot match) fails the client.
    with pytest.raises(SaslFailed, match="SCRAM-SHA-256"):
        client.next(b"v=AAAA")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"mechanism": "PLAIN", "username": "a"}, "cluster.sasl.password: required for PLAIN"),
        ({"mechanism": "OAUTHBEARER"}, "cluster.sasl.token: OAUTHBEARER takes token or"),
        (
            {"mechanism": "OAUTHBEARER", "token": "t", "token_file": "/t"},
            "cluster.sasl.token: OAUTHBEARER takes token or token_file (one of them)",
        ),
        (
            {"mechanism": "OAUTHBEARER", "token": "t", "username": "a"},
            "cluster.sasl.username: not used by OAUTHBEARER",
        ),
        ({"mechanism": "GSSAPI", "username": "a", "password": "p"}, "cluster.sasl.mechanism: "),
    ],
)
def test_bad_sasl_settings_are_named(values: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"cluster": {"bootstrap_servers": ["b:1"], "sasl": values}})
    assert str(err.value).startswith(message), str(err.value)


def test_the_password_stays_out_of_errors_and_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KPROXY_TEST_SASL_PASSWORD", "hunter2")
    cfg = parse_config(
        {
            "cluster": {
                "bootstrap_servers": ["b:1"],
                "sasl": {
                    "mechanism": "SCRAM-SHA-512",
                    "username": "kproxy",
                    "password": {"env": "KPROXY_TEST_SASL_PASSWORD"},
                },
            }
        }
    )
    assert cfg.cluster.sasl is not None
    assert "hunter2" not in repr(cfg)
