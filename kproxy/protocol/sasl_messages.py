"""The requests of kproxy's own connections before Metadata: ApiVersions (the probe a
broker answers before authentication) and SASL (SaslHandshake v1, SaslAuthenticate v1).

Non-flexible versions only: request header v1, response header v0, no tagged fields.
Every broker since Kafka 1.0 serves them, 4.x included (KIP-896 kept SaslHandshake v1
and SaslAuthenticate v0-2). Clients' own SASL exchanges are never built here: they pass
through kproxy as they are.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.requests import request_frame

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def api_versions_v0_request(correlation_id: int, client_id: bytes = b"kproxy") -> bytes:
    return request_frame(API_VERSIONS, 0, correlation_id, client_id, b"")


def sasl_handshake_v1_request(
    correlation_id: int, mechanism: str, client_id: bytes = b"kproxy"
) -> bytes:
    name = mechanism.encode()
    return request_frame(SASL_HANDSHAKE, 1, correlation_id, client_id, _I16.pack(len(name)) + name)


def sasl_authenticate_v1_request(
    correlation_id: int, auth_bytes: bytes, client_id: bytes = b"kproxy"
) -> bytes:
    body = _I32.pack(len(auth_bytes)) + auth_bytes
    return request_frame(SASL_AUTHENTICATE, 1, correlation_id, client_id, body)


class _Reader:
    """Reads the fields of one response body, failing as MalformedMessage."""

    def __init__(self, frame: bytes | memoryview, what: str) -> None:
        self.frame = memoryview(frame)
        self.pos = 4  # after the correlation id (response header v0)
        self.what = what

    def _take(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.frame):
            raise MalformedMessage(f"{self.what} response truncated")
        value = int(fmt.unpack_from(self.frame, self.pos)[0])
        self.pos += fmt.size
        return value

    def int16(self) -> int:
        return self._take(_I16)

    def int32(self) -> int:
        return self._take(_I32)

    def int64(self) -> int:
        return self._take(_I64)

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.frame):
            raise MalformedMessage(f"{self.what} response truncated")
        value = bytes(self.frame[self.pos : self.pos + size])
        self.pos += size
        return value

    def string(self) -> str | None:
        size = self.int16()
        return None if size < 0 else self.raw(size).decode("utf-8", "replace")


class HandshakeAnswer(NamedTuple):
    error_code: int
    mechanisms: list[str]


class AuthenticateAnswer(NamedTuple):
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int


def api_versions_error(frame: bytes | memoryview) -> int:
    """The error code of an ApiVersions response (any version starts with it)."""
    return _Reader(frame, "ApiVersions").int16()


def sasl_handshake_answer(frame: bytes | memoryview) -> HandshakeAnswer:
    body = _Reader(frame, "SaslHandshake")
    error = body.int16()
    count = body.int32()
    if count < 0 or count > len(body.frame):
        raise MalformedMessage("SaslHandshake response with a bad mechanism count")
    return HandshakeAnswer(error, [body.string() or "" for _ in range(count)])


def sasl_authenticate_answer(frame: bytes | memoryview) -> AuthenticateAnswer:
    body = _Reader(frame, "SaslAuthenticate")
    error = body.int16()
    message = body.string()
    size = body.int32()
    auth = b"" if size < 0 else body.raw(size)
    return AuthenticateAnswer(error, message, auth, body.int64())
