"""Who a client says it is, read from its own SASL exchange as it passes (sans-IO).

kproxy never terminates a client's SASL: the broker authenticates, and kproxy reads
the name the client gave once the broker has said yes (`kproxy.session.identity`).
Only the name is taken out of a token; passwords, SCRAM proofs and bearer tokens are
never kept, logged or returned.

* SaslHandshake (v1; v0 is refused by admission) names the mechanism;
* SaslAuthenticate v0-2 carries the mechanism's tokens (v2 flexible, KIP-482);
* PLAIN (RFC 4616): `[authzid] NUL authcid NUL passwd`, the principal is the authcid, as
  Kafka's PlainSaslServer takes it;
* SCRAM (RFC 5802): the client-first message `n,[a=authzid],n=saslname,r=nonce[,ext]`,
  the principal is the saslname with `=2C` and `=3D` decoded, as Kafka's ScramSaslServer
  takes it; with the `tokenauth=true` extension the name is a delegation token's id,
  whose owner only the broker knows;
* OAUTHBEARER (RFC 7628): the client's first message `n,[a=authzid],^Aauth=Bearer
  TOKEN^A...^A^A`, the principal is a claim (`sub` by default) of the JWT's payload, read
  without checking its signature: the broker checks it and says yes or no.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Final

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.primitives import INT16, INT32, read_uvarint

PLAIN: Final = "PLAIN"
OAUTHBEARER: Final = "OAUTHBEARER"
SCRAM_MECHANISMS: Final = frozenset(("SCRAM-SHA-256", "SCRAM-SHA-512"))
# Kafka's ScramMessages.ClientFirstMessage: only the "n" channel-binding flag.
_SCRAM_FIRST: Final = re.compile(
    rb"n,(?:a=(?P<authzid>[^,]*))?,n=(?P<name>[^,]*),r=[^,]*(?P<extensions>.*)", re.DOTALL
)
_OAUTH_FIRST: Final = re.compile(
    rb"n,(?:a=(?P<authzid>[^,]*))?,\x01(?P<kvs>(?:[^\x01]*\x01)+)\x01", re.DOTALL
)
_BEARER: Final = re.compile(r"[Bb]earer +(?P<token>[A-Za-z0-9_.~+/=-]*)")


class _Body:
    """One message body from `pos` of `frame`, read field by field (MalformedMessage
    when it ends early)."""

    def __init__(self, frame: bytes | memoryview, pos: int, flexible: bool) -> None:
        self.frame = frame
        self.pos = pos
        self.flexible = flexible

    def _fixed(self, size: int) -> int:
        if self.pos + size > len(self.frame):
            raise MalformedMessage("SASL message truncated")
        start, self.pos = self.pos, self.pos + size
        return start

    def int16(self) -> int:
        return int(INT16.unpack_from(self.frame, self._fixed(2))[0])

    def _length(self, width: int) -> int:
        """A string's or bytes' length: -1 for null."""
        if self.flexible:
            n, self.pos = read_uvarint(self.frame, self.pos)
            return n - 1
        at = self._fixed(width)
        return int((INT16 if width == 2 else INT32).unpack_from(self.frame, at)[0])

    def string(self) -> str | None:
        n = self._length(2)
        if n < 0:
            return None
        return bytes(self.frame[self._fixed(n) : self.pos]).decode("utf-8", "replace")

    def bytes_field(self) -> bytes:
        n = self._length(4)
        if n < 0:
            raise MalformedMessage("SASL auth bytes are null")
        return bytes(self.frame[self._fixed(n) : self.pos])


def handshake_mechanism(frame: bytes | memoryview, body: int) -> str:
    """The mechanism a SaslHandshake request (v0-1, never flexible) asks for."""
    return _Body(frame, body, False).string() or ""


def authenticate_request_bytes(frame: bytes | memoryview, body: int, version: int) -> bytes:
    """The token of a SaslAuthenticate request (v2+ flexible)."""
    return _Body(frame, body, version >= 2).bytes_field()


def authenticate_response(frame: bytes | memoryview, body: int, version: int) -> tuple[int, bytes]:
    """A SaslAuthenticate response's error code and token (v2+ flexible)."""
    reader = _Body(frame, body, version >= 2)
    error_code = reader.int16()
    reader.string()  # the error message
    return error_code, reader.bytes_field()


def _utf8(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def plain_user(token: bytes) -> str | None:
    """The authcid of a PLAIN message; None when it is not one (or names no one)."""
    parts = token.split(b"\x00")
    if len(parts) != 3 or not parts[1]:
        return None
    return _utf8(parts[1])


def _saslname(raw: bytes) -> str | None:
    """RFC 5802's saslname: `=2C` is a comma, `=3D` an equals sign, any other `=` bad."""
    name = _utf8(raw)
    if name is None or re.search(r"=(?!2C|3D)", name):
        return None
    return name.replace("=2C", ",").replace("=3D", "=")


def scram_user(token: bytes) -> tuple[str, bool] | None:
    """The saslname of a SCRAM client-first message, and whether it names a delegation
    token (KIP-48: `tokenauth=true`); None when the message is not one."""
    found = _SCRAM_FIRST.fullmatch(token)
    if found is None:
        return None
    name = _saslname(found["name"])
    if not name:
        return None
    extensions = found["extensions"].split(b",")
    return name, b"tokenauth=true" in extensions


def oauthbearer_subject(token: bytes, claim: str) -> str | None:
    """The `claim` of the bearer token in an OAUTHBEARER client's first message, its
    signature unchecked; None when there is no such token or claim, or it is no string."""
    found = _OAUTH_FIRST.fullmatch(token)
    if found is None:
        return None
    for pair in found["kvs"].split(b"\x01"):
        key, _, value = pair.partition(b"=")
        if key != b"auth":
            continue
        bearer = _BEARER.fullmatch(_utf8(value) or "")
        return None if bearer is None else _jwt_claim(bearer["token"], claim)
    return None


def _jwt_claim(jwt: str, claim: str) -> str | None:
    parts = jwt.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError):  # JSONDecodeError and UnicodeDecodeError too
        return None
    value = claims.get(claim) if isinstance(claims, dict) else None
    return value if isinstance(value, str) and value else None
