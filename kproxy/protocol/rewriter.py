"""Rewrite the broker endpoints a walker found, splicing only the bytes that change.

For each endpoint the caller's mapping returns the address clients must see, or None
when the endpoint cannot be mapped. An unmappable endpoint never reaches a client:

* in an array of endpoints (Brokers, NodeEndpoints, Listeners...), it is removed and
  the array's count is lowered;
* in FindCoordinator (top level in v0-3, `Coordinators[]` in v4+) the entry becomes
  COORDINATOR_NOT_AVAILABLE with an empty host, so the client asks again instead of
  failing on a missing key;
* anywhere else (UpdateRaftVoterResponse.CurrentLeader) the host is emptied and the
  port zeroed.

Every length that changes is corrected: compact and classic string lengths, array
counts, the sizes of enclosing tagged fields (KIP-482), and the frame size. Unknown
tagged fields and every other byte survive as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.primitives import (
    INT16,
    INT32,
    UINT16,
    encode_count,
    encode_string,
    encode_uvarint,
)
from kproxy.protocol.splice import Edit, delta_within, splice
from kproxy.protocol.walker import ArraySpan, ConfigEntry, Endpoint, TaggedSpan

COORDINATOR_NOT_AVAILABLE = 15

Mapping = Callable[[Endpoint], "tuple[str, int] | None"]


class RewriteResult(NamedTuple):
    chunks: list[bytes | memoryview]  # new size prefix, then the frame's pieces
    size: int  # new frame size (without its 4-byte prefix)
    rewritten: list[Endpoint]  # endpoints given a new address
    removed: list[Endpoint]  # endpoints that could not be mapped


def _port_bytes(port: int, width: int) -> bytes:
    if width == 2:
        if not 0 <= port <= 0xFFFF:
            raise ValueError(f"port {port} does not fit a uint16 field")
        return UINT16.pack(port)
    return INT32.pack(port)


def rewrite(frame: memoryview, endpoints: list[Endpoint], mapping: Mapping) -> RewriteResult:
    """Rewrite `endpoints` (found by `walk` in `frame`) through `mapping`."""
    edits: list[Edit] = []
    rewritten: list[Endpoint] = []
    removed: list[Endpoint] = []
    shrunk: dict[int, tuple[ArraySpan, int]] = {}
    containers: dict[int, TaggedSpan] = {}
    for ep in endpoints:
        target = mapping(ep)
        if target is not None:
            host, port = target
            changed = False
            if host != ep.host:
                edits.append((ep.host_start, ep.host_end, encode_string(host, ep.compact)))
                changed = True
            if port != ep.port:
                edits.append(
                    (ep.port_start, ep.port_start + ep.port_width, _port_bytes(port, ep.port_width))
                )
                changed = True
            if not changed:
                continue
            rewritten.append(ep)
        else:
            removed.append(ep)
            if ep.error_pos is not None:
                edits.append(
                    (ep.error_pos, ep.error_pos + 2, INT16.pack(COORDINATOR_NOT_AVAILABLE))
                )
                edits.append((ep.host_start, ep.host_end, encode_string("", ep.compact)))
                no_port = -1 if ep.port_width == 4 else 0
                edits.append(
                    (
                        ep.port_start,
                        ep.port_start + ep.port_width,
                        _port_bytes(no_port, ep.port_width),
                    )
                )
            elif ep.array is not None:
                edits.append((ep.elem_start, ep.elem_end, b""))
                span, n = shrunk.get(id(ep.array), (ep.array, 0))
                shrunk[id(ep.array)] = (span, n + 1)
            else:
                edits.append((ep.host_start, ep.host_end, encode_string("", ep.compact)))
                edits.append(
                    (ep.port_start, ep.port_start + ep.port_width, _port_bytes(0, ep.port_width))
                )
        for t in ep.tagged:
            containers[t.size_start] = t
    for span, n in shrunk.values():
        edits.append((span.count_start, span.count_end, encode_count(span.count - n, span.compact)))
    # Inner tagged fields first: an outer field's new size includes the inner one's.
    for t in sorted(containers.values(), key=lambda t: t.value_end - t.value_start):
        size = t.value_end - t.value_start + delta_within(edits, t.value_start, t.value_end)
        if size < 0:
            raise MalformedMessage("tagged field size went negative")
        edits.append((t.size_start, t.size_end, encode_uvarint(size)))
    chunks, size = splice(frame, edits)
    return RewriteResult(chunks, size, rewritten, removed)


def redact_configs(
    frame: memoryview, configs: list[ConfigEntry], redacted: Callable[[str], bool]
) -> tuple[list[bytes | memoryview], int, int] | None:
    """Null the values of the entries `redacted` names and mark them sensitive, as a
    broker shows a password. Returns (chunks, new size, entries redacted), or None when
    no entry needs it. Only string lengths change: configuration entries are never
    tagged fields, so no enclosing size needs correcting."""
    edits: list[Edit] = []
    count = 0
    for entry in configs:
        if entry.value is None or not redacted(entry.name):
            continue
        count += 1
        edits.append((entry.value_start, entry.value_end, encode_string(None, entry.compact)))
        if entry.sensitive_pos is not None:
            edits.append((entry.sensitive_pos, entry.sensitive_pos + 1, b"\x01"))
    if not edits:
        return None
    chunks, size = splice(frame, edits)
    return chunks, size, count
