"""Clamp a broker's ApiVersions response to what kproxy can carry (fail closed).

A client picks the highest version both sides support, so the response kproxy
forwards must never offer a version kproxy cannot parse: each key's max version is
lowered to kproxy's (for endpoint-bearing messages, the versions it can walk), keys
kproxy does not know are dropped, and everything else (error code, throttle time,
features and other tagged fields) is forwarded byte for byte.

KIP-511: when the broker does not know the request's version it answers
UNSUPPORTED_VERSION (35) with a v0-format body, and the client retries lower.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple

from kproxy.protocol.apis import APIS, WALKED_REQUESTS, WALKED_RESPONSES, is_flexible
from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.plan import walked_versions
from kproxy.protocol.primitives import INT16, encode_count, read_int16, read_int32, read_uvarint
from kproxy.protocol.splice import Edit, splice

UNSUPPORTED_VERSION = 35
# What reading past the end of a short frame raises (struct.error is not a ValueError).
_DECODE_ERRORS = (struct.error, IndexError, ValueError)


def _supported_ranges() -> dict[int, tuple[int, int]]:
    """Messages kproxy must walk: a version without a walk plan is never offered."""
    out = {k: (info.min_version, info.max_version) for k, info in APIS.items()}
    for k in WALKED_RESPONSES | WALKED_REQUESTS:
        vs = set(APIS[k].versions)
        if k in WALKED_RESPONSES:
            vs &= set(walked_versions(k, False))
        if k in WALKED_REQUESTS:
            vs &= set(walked_versions(k, True))
        out[k] = (min(vs), max(vs))
    return out


SUPPORTED: dict[int, tuple[int, int]] = _supported_ranges()


class ClampResult(NamedTuple):
    chunks: list[bytes | memoryview]
    size: int
    dropped: list[int]  # api keys removed
    lowered: list[int]  # api keys whose max version was lowered


def clamp_api_versions(
    frame: memoryview,
    body_offset: int,
    version: int,
    supported: Callable[[int], tuple[int, int] | None] = SUPPORTED.get,
) -> ClampResult | None:
    """Clamp the ApiVersions response body at `body_offset`; None if nothing changes."""
    try:
        error_code = read_int16(frame, body_offset)[0]
        if error_code == UNSUPPORTED_VERSION and version > 0:
            try:
                return _clamp(frame, body_offset, 0, supported)
            except (MalformedMessage, *_DECODE_ERRORS):
                pass  # not a v0 body after all: parse it as the request's version
        return _clamp(frame, body_offset, version, supported)
    except _DECODE_ERRORS as exc:
        raise MalformedMessage(f"malformed ApiVersions response: {exc}") from exc


def _clamp(
    frame: memoryview,
    body_offset: int,
    version: int,
    supported: Callable[[int], tuple[int, int] | None],
) -> ClampResult | None:
    flexible = is_flexible(18, version)
    pos = body_offset + 2
    count_start = pos
    if flexible:
        n, pos = read_uvarint(frame, pos)
        n -= 1
    else:
        n = read_int32(frame, pos)[0]
        pos += 4
    count_end = pos
    if n < 0 or n * 6 > len(frame) - pos:
        raise MalformedMessage(f"bad ApiKeys count {n}")
    edits: list[Edit] = []
    dropped: list[int] = []
    lowered: list[int] = []
    for _ in range(n):
        start = pos
        key, low, high = (
            read_int16(frame, pos)[0],
            read_int16(frame, pos + 2)[0],
            read_int16(frame, pos + 4)[0],
        )
        pos += 6
        if flexible:
            tags, pos = read_uvarint(frame, pos)
            for _ in range(tags):
                _tag, pos = read_uvarint(frame, pos)
                size, pos = read_uvarint(frame, pos)
                pos += size
        if pos > len(frame):
            raise MalformedMessage("ApiKeys entry runs past the frame")
        ours = supported(key)
        if ours is None or high < ours[0] or low > ours[1]:
            edits.append((start, pos, b""))
            dropped.append(key)
        elif high > ours[1]:
            edits.append((start + 4, start + 6, INT16.pack(ours[1])))
            lowered.append(key)
    if not edits:
        return None
    if dropped:
        edits.append((count_start, count_end, encode_count(n - len(dropped), flexible)))
    # The rest of the body must still parse for this version to be the right one.
    if version >= 1 and pos + 4 > len(frame):
        raise MalformedMessage("ApiVersions response truncated before ThrottleTimeMs")
    if version == 0 and pos != len(frame):
        raise MalformedMessage("trailing bytes after a v0 ApiVersions response")
    chunks, size = splice(frame, edits)
    return ClampResult(chunks, size, dropped, lowered)
