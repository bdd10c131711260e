"""A connection's principal, learned from the client's own SASL exchange as it passes
through the session (kio builds every frame): taken only once the broker says the
exchange succeeded, changed by a later exchange (KIP-368), kept by a failed one, and
reported once per exchange; on both paths (with and without the fast lane)."""

from __future__ import annotations

import datetime
import importlib
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kproxy.session import ProxySession, SessionLimits
from kproxy.session.identity import ANONYMOUS, CLAIMED_NAME_LIMIT, Authentication
from tests.kio_support import encode_request_frame, encode_response_frame
from tests.sasl_tokens import oauth_first, unsigned_jwt
from tests.session.frames import address_map, joined

SCRAM_FIRST = b"n,,n=bob,r=rOprNGfwEbeRWgbNEkqO"
SCRAM_FINAL = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4j"
FAILED = ErrorCode.sasl_authentication_failed


class Exchange:
    """One client connection's session, driven as the runtime drives it."""

    def __init__(self, lane: bool, version: int = 2) -> None:
        limits = SessionLimits(1 << 20, 100)
        self.session = ProxySession(address_map(), limits, fast_lane=lane)
        self.version = version
        self.corr = 0
        self.reported: list[Authentication] = []

    def _round(self, request: Any, response: Any) -> bytes:
        self.corr += 1
        step = self.session.from_client(encode_request_frame(request, self.corr, "app"), 1.0)
        assert step.close is None and joined(step.to_upstream)
        answer = self.session.from_upstream(encode_response_frame(response, self.corr), 2.0)
        assert answer.close is None
        if answer.more is not None:
            self.reported += answer.more.authentications
        return joined(answer.to_client)

    def handshake(self, mechanism: str, error: ErrorCode = ErrorCode.none) -> None:
        req = importlib.import_module("kio.schema.sasl_handshake.v1.request")
        resp = importlib.import_module("kio.schema.sasl_handshake.v1.response")
        self._round(
            req.SaslHandshakeRequest(mechanism=mechanism),
            resp.SaslHandshakeResponse(error_code=error, mechanisms=("PLAIN",)),
        )

    def authenticate(
        self, token: bytes, error: ErrorCode = ErrorCode.none, back: bytes = b""
    ) -> bytes:
        v = self.version
        req = importlib.import_module(f"kio.schema.sasl_authenticate.v{v}.request")
        resp = importlib.import_module(f"kio.schema.sasl_authenticate.v{v}.response")
        fields: dict[str, Any] = {"error_code": error, "error_message": None, "auth_bytes": back}
        if v >= 1:
            fields["session_lifetime"] = datetime.timedelta(seconds=2)
        return self._round(
            req.SaslAuthenticateRequest(auth_bytes=token), resp.SaslAuthenticateResponse(**fields)
        )

    @property
    def principal(self) -> str:
        identity = self.session.identity
        return ANONYMOUS if identity is None else identity.principal

    def outcomes(self) -> list[tuple[str, str | None, bool, int, bool]]:
        return [
            (a.mechanism, a.principal, a.succeeded, a.error_code, a.reauthentication)
            for a in self.reported
        ]


@pytest.fixture(params=[True, False], ids=["lane", "general"])
def lane(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_plain_gives_the_principal_once_the_broker_says_yes(lane: bool, version: int) -> None:
    ex = Exchange(lane, version)
    assert ex.principal == ANONYMOUS
    ex.handshake("PLAIN")
    ex.authenticate(b"\x00alice\x00alice-secret")
    assert ex.principal == "User:alice"
    assert ex.outcomes() == [("PLAIN", "User:alice", True, 0, False)]


def test_scram_takes_the_name_of_its_first_message_at_the_end_of_its_second(lane: bool) -> None:
    ex = Exchange(lane)
    ex.handshake("SCRAM-SHA-256")
    ex.authenticate(
        SCRAM_FIRST, back=b"r=rOprNGfwEbeRWgbNEkqO%hvYD,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert ex.principal == ANONYMOUS and ex.outcomes() == []  # the server-first message
    ex.authenticate(SCRAM_FINAL, back=b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    assert ex.principal == "User:bob"
    assert ex.outcomes() == [("SCRAM-SHA-256", "User:bob", True, 0, False)]


def test_a_delegation_tokens_owner_is_the_brokers_to_know(lane: bool) -> None:
    ex = Exchange(lane)
    ex.handshake("SCRAM-SHA-512")
    ex.authenticate(b"n,,n=tok-1,r=abc,tokenauth=true", back=b"r=abcdef,s=c2FsdA==,i=4096")
    ex.authenticate(b"c=biws,r=abcdef,p=cHJvb2Y=", back=b"v=dmVyaWZpZXI=")
    assert ex.principal == "DelegationToken:tok-1"


def test_oauthbearer_gives_the_tokens_subject(lane: bool) -> None:
    ex = Exchange(lane)
    ex.session.oauthbearer_claim = "azp"
    ex.handshake("OAUTHBEARER")
    ex.authenticate(oauth_first(unsigned_jwt({"sub": "alice", "azp": "svc-7"})))
    assert ex.principal == "User:svc-7"


def test_an_oauthbearer_error_challenge_is_a_failure_after_its_acknowledgement(lane: bool) -> None:
    """RFC 7628 3.2.2: the broker answers a bad token with an error challenge (no error
    code), the client acknowledges it with ^A, and only then comes the failure."""
    ex = Exchange(lane)
    ex.handshake("OAUTHBEARER")
    ex.authenticate(
        oauth_first(unsigned_jwt({"sub": "mallory"})), back=b'{"status":"invalid_token"}'
    )
    assert ex.outcomes() == []
    ex.authenticate(b"\x01", error=FAILED)
    assert ex.principal == ANONYMOUS
    assert ex.outcomes() == [("OAUTHBEARER", "User:mallory", False, 58, False)]


def test_a_failed_exchange_keeps_the_principal_and_says_who_was_claimed(lane: bool) -> None:
    ex = Exchange(lane)
    ex.handshake("SCRAM-SHA-256")
    ex.authenticate(SCRAM_FIRST, back=b"r=x,s=c2FsdA==,i=4096")
    ex.authenticate(SCRAM_FINAL, error=FAILED)
    assert ex.principal == ANONYMOUS
    assert ex.outcomes() == [("SCRAM-SHA-256", "User:bob", False, 58, False)]


def test_re_authentication_may_change_the_principal_and_a_failed_one_keeps_it(lane: bool) -> None:
    """KIP-368: a later exchange on the same connection."""
    ex = Exchange(lane)
    ex.handshake("PLAIN")
    ex.authenticate(b"\x00alice\x00pw")
    ex.handshake("PLAIN")
    ex.authenticate(b"\x00carol\x00pw")
    assert ex.principal == "User:carol"
    ex.handshake("PLAIN")
    ex.authenticate(b"\x00dave\x00pw", error=FAILED)
    assert ex.principal == "User:carol"
    assert ex.outcomes() == [
        ("PLAIN", "User:alice", True, 0, False),
        ("PLAIN", "User:carol", True, 0, True),
        ("PLAIN", "User:dave", False, 58, True),
    ]


def test_a_mechanism_the_broker_refuses_is_a_failure(lane: bool) -> None:
    ex = Exchange(lane)
    ex.handshake("GSSAPI", error=ErrorCode.unsupported_sasl_mechanism)
    assert ex.outcomes() == [("GSSAPI", None, False, 33, False)]


def test_gssapi_names_no_one(lane: bool) -> None:
    ex = Exchange(lane)
    ex.handshake("GSSAPI")
    ex.authenticate(b"\x60\x82kerberos-ticket")
    ex.authenticate(b"")
    assert ex.principal == ANONYMOUS and ex.outcomes() == []


def test_a_claimed_name_a_broker_refused_is_reported_cut_short(lane: bool) -> None:
    ex = Exchange(lane)
    ex.handshake("PLAIN")
    ex.authenticate(b"\x00" + b"m" * 5000 + b"\x00pw", error=FAILED)
    (failed,) = ex.reported
    assert failed.principal is not None
    assert len(failed.principal) == CLAIMED_NAME_LIMIT + 3


def test_the_exchange_passes_unchanged(lane: bool) -> None:
    ex = Exchange(lane)
    ex.handshake("PLAIN")
    assert ex.authenticate(b"\x00alice\x00pw", back=b"") != b""
    assert ex.session.inflight.latest_id == 2 or len(ex.session.inflight) == 0


def test_a_request_too_short_for_its_token_closes_the_connection(lane: bool) -> None:
    ex = Exchange(lane)
    ex.handshake("PLAIN")
    req = importlib.import_module("kio.schema.sasl_authenticate.v1.request")
    frame = encode_request_frame(req.SaslAuthenticateRequest(auth_bytes=b"x" * 40), 9, "app")
    cut = (len(frame) - 14).to_bytes(4, "big") + frame[4:-10]
    step = ex.session.from_client(cut, 1.0)
    assert step.close is not None and step.close.reason == "malformed"
    assert not step.to_upstream
