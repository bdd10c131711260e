"""Who is calling on one client connection (sans-IO): its principal, as a Kafka broker
would name it.

* `User:ANONYMOUS` until something says otherwise, as Kafka names a client nothing
  authenticated;
* the client certificate's subject, mapped by `principals.tls_mapping_rules` (the
  runtime sets it once the TLS handshake is done: `kproxy.runtime.principal_mapping`);
* a SASL name, read from the client's own SaslHandshake and SaslAuthenticate requests
  (`kproxy.protocol.sasl_identity`) and taken only once the broker's response says the
  exchange succeeded. Over TLS it wins, as it does on a Kafka SASL_SSL listener. A later
  exchange on the same connection (KIP-368 re-authentication) may change it; a failed
  one leaves it as it was.

Each exchange that ends, in success or failure, is reported (`Authentication`) for the
runtime to log, count and write as an `authentication` event. PLAIN, SCRAM-SHA-256/512
and OAUTHBEARER are read; GSSAPI's name is inside Kerberos tickets kproxy cannot open,
so a GSSAPI client keeps the principal it had and only failures are reported.
"""

from __future__ import annotations

from typing import Final

from kproxy.protocol.apis import SASL_HANDSHAKE
from kproxy.protocol.headers import RequestHeader, parse_response_header
from kproxy.protocol.primitives import INT16
from kproxy.protocol.sasl_identity import (
    OAUTHBEARER,
    PLAIN,
    SCRAM_MECHANISMS,
    authenticate_request_bytes,
    authenticate_response,
    handshake_mechanism,
    oauthbearer_subject,
    plain_user,
    scram_user,
)
from kproxy.session.inflight import InFlight

ANONYMOUS: Final = "User:ANONYMOUS"
# A name a client claimed in an exchange the broker refused is reported this long at most:
# a hostile client chooses it.
CLAIMED_NAME_LIMIT: Final = 256


class Authentication:
    """One SASL exchange that ended: the principal it gave (or, failed, the name the
    client claimed, if any), and whether it re-authenticated a connection (KIP-368)."""

    __slots__ = (
        "client_id",
        "error_code",
        "mechanism",
        "principal",
        "reauthentication",
        "succeeded",
    )

    def __init__(
        self,
        mechanism: str,
        principal: str | None,
        succeeded: bool,
        error_code: int,
        reauthentication: bool,
    ) -> None:
        self.mechanism = mechanism
        self.principal = principal
        self.succeeded = succeeded
        self.error_code = error_code
        self.reauthentication = reauthentication
        self.client_id: str | None = None  # of the request the broker answered


class Identity:
    """A connection's principal and the SASL exchange under way, if any."""

    __slots__ = ("authenticated", "claim", "final", "mechanism", "name", "principal", "rounds")

    def __init__(self, claim: str = "sub") -> None:
        self.principal = ANONYMOUS
        self.claim = claim  # the OAUTHBEARER claim that names the principal
        self.authenticated = False  # a SASL exchange succeeded on this connection
        self.mechanism = ""  # of the exchange under way ("" for none)
        self.name: str | None = None  # the principal's name, read from its first token
        self.rounds = 0  # SaslAuthenticate requests of the exchange so far
        self.final = False  # the request in flight ends the exchange if it succeeds

    def handshake(self, mechanism: str) -> None:
        """A SaslHandshake request: an exchange begins."""
        self.mechanism = mechanism
        self.name = None
        self.rounds = 0
        self.final = False

    def request(self, token: bytes) -> None:
        """A SaslAuthenticate request's token, on its way to the broker."""
        self.rounds += 1
        mechanism, first = self.mechanism, self.rounds == 1
        if mechanism == PLAIN:
            user = plain_user(token) if first else None
            self.name = None if user is None else f"User:{user}"
            self.final = first
        elif mechanism in SCRAM_MECHANISMS:
            if first:
                found = scram_user(token)
                self.name = None
                if found is not None:  # KIP-48: a delegation token's id, not a user
                    name, token_auth = found
                    self.name = f"DelegationToken:{name}" if token_auth else f"User:{name}"
            self.final = self.rounds == 2  # client-final: the broker's answer ends it
        elif mechanism == OAUTHBEARER:
            if first:
                subject = oauthbearer_subject(token, self.claim)
                self.name = None if subject is None else f"User:{subject}"
            self.final = first
        else:
            self.final = False

    def response(self, error_code: int, token: bytes) -> Authentication | None:
        """The broker's answer to the SaslAuthenticate request in flight: the exchange's
        end, if it ended."""
        if error_code != 0:
            return self._end(False, error_code)
        if not self.final:
            return None
        if self.mechanism == OAUTHBEARER and token:
            # RFC 7628 3.2.2: an error challenge; the client acknowledges it and the
            # broker's next answer is the failure.
            self.final = False
            return None
        return self._end(True, 0)

    def handshake_refused(self, error_code: int) -> Authentication:
        """The broker refused the mechanism (UNSUPPORTED_SASL_MECHANISM)."""
        return self._end(False, error_code)

    def _end(self, succeeded: bool, error_code: int) -> Authentication:
        name = self.name
        if succeeded and name is not None:
            self.principal = name
        elif name is not None and len(name) > CLAIMED_NAME_LIMIT:
            name = name[:CLAIMED_NAME_LIMIT] + "..."
        done = Authentication(
            self.mechanism, name, succeeded, error_code, reauthentication=self.authenticated
        )
        self.authenticated = self.authenticated or succeeded
        self.mechanism, self.name, self.rounds, self.final = "", None, 0, False
        return done


def sasl_request(identity: Identity, hdr: RequestHeader, frame: memoryview) -> None:
    """A SaslHandshake or SaslAuthenticate request read by the general path."""
    if hdr.api_key == SASL_HANDSHAKE:
        identity.handshake(handshake_mechanism(frame, hdr.body_offset))
    elif identity.mechanism:  # without a handshake the broker refuses it
        identity.request(authenticate_request_bytes(frame, hdr.body_offset, hdr.api_version))


def sasl_response(identity: Identity, req: InFlight, frame: memoryview) -> Authentication | None:
    """The broker's SaslHandshake or SaslAuthenticate response: the exchange's end, if
    this answer ended it."""
    body = parse_response_header(frame, req.header_version)[1]
    if req.api_key == SASL_HANDSHAKE:
        if len(frame) < body + 2:
            return None  # the client makes of it what it can
        error_code = int(INT16.unpack_from(frame, body)[0])
        ended = identity.handshake_refused(error_code) if error_code else None
    elif not identity.mechanism:
        return None
    else:
        error_code, token = authenticate_response(frame, body, req.version)
        ended = identity.response(error_code, token)
    if ended is not None:
        ended.client_id = req.client_id
    return ended
