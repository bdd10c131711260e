"""Request header v0/v1/v2 and response header v0/v1 (docs/protocol.md §3)."""

from __future__ import annotations

import struct
from typing import Final

from kproxy.protocol.apis import header_versions
from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.primitives import INT16, INT32, read_uvarint

_hhi: Final = struct.Struct(">hhi").unpack_from


class RequestHeader:
    """A parsed request header. A plain class with slots, not a NamedTuple: the mypyc
    build makes it native, and one is made for every request the general path admits."""

    __slots__ = (
        "api_key",
        "api_version",
        "body_offset",
        "client_id",
        "correlation_id",
        "header_version",
        "known",
        "response_header_version",
    )

    def __init__(
        self,
        api_key: int,
        api_version: int,
        correlation_id: int,
        client_id: str | None,
        header_version: int,
        body_offset: int,
        known: bool,
        response_header_version: int,
    ) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.header_version = header_version  # 0, 1 or 2; 1 is assumed for an unknown one
        self.body_offset = body_offset  # where the body starts in the frame; -1 if unknown
        self.known = known  # the (key, version) is in kproxy's API table
        # Of its response (0 for an unknown (key, version)).
        self.response_header_version = response_header_version


def _skip_tagged(frame: memoryview, pos: int) -> int:
    if pos < len(frame) and frame[pos] == 0:
        return pos + 1  # no tagged field: nearly every header
    count, pos = read_uvarint(frame, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(frame, pos)
        size, pos = read_uvarint(frame, pos)
        pos += size
        if pos > len(frame):
            raise MalformedMessage("truncated tagged field in header")
    return pos


def parse_request_header(frame: memoryview) -> RequestHeader:
    """Parse the header of a request frame (the bytes after the size prefix).

    An unknown API key or version is not an error here: the header still parses (as
    header v1, which every request header since v1 starts with) and the body is opaque.
    """
    if len(frame) < 8:
        raise MalformedMessage(f"request frame of {len(frame)} bytes is shorter than a header")
    # Typed, so that the mypyc build keeps them as machine integers, not objects.
    api_key: int
    api_version: int
    correlation_id: int
    api_key, api_version, correlation_id = _hhi(frame, 0)
    versions = header_versions(api_key, api_version)
    known = versions is not None
    header_version, response_version = versions if versions is not None else (1, 0)
    if header_version == 0:
        return RequestHeader(
            api_key, api_version, correlation_id, None, 0, 8, known, response_version
        )
    if len(frame) < 10:
        raise MalformedMessage("request header truncated before the client id")
    n: int = INT16.unpack_from(frame, 8)[0]
    pos = 10
    client_id: str | None = None
    if n >= 0:
        if pos + n > len(frame):
            raise MalformedMessage("request header client id runs past the frame")
        try:
            client_id = str(frame[pos : pos + n], "utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedMessage("client id is not UTF-8") from exc
        pos += n
    elif n != -1:
        raise MalformedMessage(f"bad client id length {n}")
    if header_version == 2:
        pos = _skip_tagged(frame, pos)
    elif not known:
        pos = -1
    return RequestHeader(
        api_key,
        api_version,
        correlation_id,
        client_id,
        header_version,
        pos,
        known,
        response_version,
    )


def parse_response_header(frame: memoryview, header_version: int) -> tuple[int, int]:
    """Return (correlation id, body offset) of a response frame."""
    if len(frame) < 4:
        raise MalformedMessage(f"response frame of {len(frame)} bytes has no correlation id")
    correlation_id = INT32.unpack_from(frame, 0)[0]
    if header_version == 0:
        return correlation_id, 4
    return correlation_id, _skip_tagged(frame, 4)


def response_correlation_id(frame: memoryview) -> int:
    """The correlation id: the first field of every response header version."""
    if len(frame) < 4:
        raise MalformedMessage(f"response frame of {len(frame)} bytes has no correlation id")
    return int(INT32.unpack_from(frame, 0)[0])
