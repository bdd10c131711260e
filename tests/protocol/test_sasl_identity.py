"""The name a client gives in its own SASL exchange, read from frames kio builds (an
independent codec) for every version of SaslHandshake and SaslAuthenticate, and from
the tokens of PLAIN, SCRAM and OAUTHBEARER as their RFCs and Kafka's clients write them."""

from __future__ import annotations

import base64
import datetime
import importlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.headers import parse_request_header, parse_response_header
from kproxy.protocol.sasl_identity import (
    authenticate_request_bytes,
    authenticate_response,
    handshake_mechanism,
    oauthbearer_subject,
    plain_user,
    scram_user,
)
from tests.kio_support import encode_request_frame, encode_response_frame, response_header_version
from tests.sasl_tokens import oauth_first, unsigned_jwt

VERSIONS = range(3)  # SaslAuthenticate v0-2, v2 flexible


def _kio(api: str, version: int, kind: str) -> object:
    return importlib.import_module(f"kio.schema.{api}.v{version}.{kind}")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_sasl_authenticate_requests_token_is_read_in_every_version(version: int) -> None:
    module = _kio("sasl_authenticate", version, "request")
    token = b"\x00alice\x00alice-secret"
    frame = encode_request_frame(module.SaslAuthenticateRequest(auth_bytes=token), 7, "c")
    head = memoryview(frame)[4:]
    hdr = parse_request_header(head)
    assert authenticate_request_bytes(head, hdr.body_offset, version) == token


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(("code", "message", "token"), [(0, None, b"v=proof"), (58, "no", b"")])
def test_a_sasl_authenticate_responses_outcome_is_read_in_every_version(
    version: int, code: int, message: str | None, token: bytes
) -> None:
    from kio.schema.errors import ErrorCode

    module = _kio("sasl_authenticate", version, "response")
    response = module.SaslAuthenticateResponse
    fields = {"error_code": ErrorCode(code), "error_message": message, "auth_bytes": token}
    if version >= 1:
        fields["session_lifetime"] = datetime.timedelta(0)
    frame = memoryview(encode_response_frame(response(**fields), 7))[4:]
    body = parse_response_header(frame, response_header_version(response))[1]
    assert authenticate_response(frame, body, version) == (code, token)


def test_a_handshake_names_its_mechanism() -> None:
    module = _kio("sasl_handshake", 1, "request")
    frame = encode_request_frame(module.SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1, "c")
    head = memoryview(frame)[4:]
    assert handshake_mechanism(head, parse_request_header(head).body_offset) == "SCRAM-SHA-512"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_truncated_token_is_malformed(version: int) -> None:
    module = _kio("sasl_authenticate", version, "request")
    frame = encode_request_frame(module.SaslAuthenticateRequest(auth_bytes=b"x" * 40), 7, "c")
    head = memoryview(frame)[4:-10]
    with pytest.raises(MalformedMessage):
        authenticate_request_bytes(head, parse_request_header(head).body_offset, version)


@pytest.mark.parametrize(
    ("token", "user"),
    [
        (b"\x00alice\x00secret", "alice"),
        (b"alice\x00alice\x00secret", "alice"),  # authzid: the broker checks it
        ("\x00jos\u00e9\x00pw".encode(), "jos\u00e9"),
        (b"\x00\x00secret", None),  # no authcid
        (b"alice\x00secret", None),  # two parts
        (b"\x00\xff\xfe\x00pw", None),  # not UTF-8
    ],
)
def test_plain_gives_its_authcid(token: bytes, user: str | None) -> None:
    assert plain_user(token) == user


@pytest.mark.parametrize(
    ("token", "found"),
    [
        (b"n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL", ("alice", False)),
        (b"n,a=alice,n=alice,r=abc", ("alice", False)),
        (b"n,,n=a=2Cb=3Dc,r=abc", ("a,b=c", False)),  # RFC 5802 5.1 escapes
        (b"n,,n=token-id,r=abc,tokenauth=true", ("token-id", True)),  # KIP-48
        (b"n,,n=a=2Xb,r=abc", None),  # a bad escape
        (b"y,,n=alice,r=abc", None),  # channel binding Kafka does not offer
        (b"n,,n=,r=abc", None),
        (b"c=biws,r=abc,p=proof", None),  # a client-final message
    ],
)
def test_scram_gives_the_saslname_of_the_client_first_message(
    token: bytes, found: tuple[str, bool] | None
) -> None:
    assert scram_user(token) == found


def test_oauthbearer_gives_the_tokens_subject_or_a_configured_claim() -> None:
    jwt = unsigned_jwt({"sub": "alice", "azp": "svc-7", "exp": 1})
    assert oauthbearer_subject(oauth_first(jwt), "sub") == "alice"
    assert oauthbearer_subject(oauth_first(jwt, authzid="alice"), "sub") == "alice"
    assert oauthbearer_subject(oauth_first(jwt), "azp") == "svc-7"
    assert oauthbearer_subject(oauth_first(jwt), "exp") is None  # not a string
    assert oauthbearer_subject(oauth_first(jwt), "scope") is None
    extensions = f"n,,\x01auth=Bearer {jwt}\x01traceId=1\x01\x01".encode()
    assert oauthbearer_subject(extensions, "sub") == "alice"


@pytest.mark.parametrize(
    "token",
    [
        b"\x01",  # the acknowledgement of an error challenge
        b"n,,\x01auth=Basic abc\x01\x01",
        b"n,,\x01auth=Bearer not-a-jwt\x01\x01",
        b"n,,\x01auth=Bearer a.!!!.c\x01\x01",
        oauth_first("e30." + base64.urlsafe_b64encode(b"[1]").decode().rstrip("=") + "."),
    ],
)
def test_oauthbearer_without_a_readable_token_names_no_one(token: bytes) -> None:
    assert oauthbearer_subject(token, "sub") is None


@given(st.binary(max_size=300))
def test_no_token_makes_a_reader_fail(token: bytes) -> None:
    """A hostile client's token is never an exception: at worst it names no one."""
    plain_user(token)
    scram_user(token)
    oauthbearer_subject(token, "sub")
    oauthbearer_subject(b"n,,\x01auth=Bearer " + token + b"\x01\x01", "sub")
