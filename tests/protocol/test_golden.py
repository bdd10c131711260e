"""Golden byte vectors for every message family of issue 2 §4 (endpoints and leadership).

The vectors are data in tests/golden/ (written once by tests/golden/make_golden.py,
committed, and checked against it here): ``<name>.hex`` is a whole wire frame,
``<name>.rewritten.hex`` the frame kproxy must produce with the fixed mapping
:func:`golden_target`. Kafka 4.x versions were encoded by kio; versions kio lacks (3.9-only
inter-broker messages, ShareFetch v0, Produce v2) and a few old client versions were
written by hand from the schemas.

Each vector is walked whole, fed through a FrameReader one byte at a time, and followed
by trailing bytes; its endpoints and leaders are compared with the tables in tests/golden/
(for kio vectors they are what kio decodes, checked when the vectors were made), and its
rewrite is compared byte for byte (and, for kio vectors, decoded by kio).
"""

from __future__ import annotations

import struct
import uuid

import pytest

from kproxy.protocol.apis import header_versions
from kproxy.protocol.frames import FrameReader
from kproxy.protocol.headers import parse_request_header, parse_response_header
from kproxy.protocol.rewriter import rewrite
from kproxy.protocol.walker import WalkResult, walk
from tests.golden.hand_vectors import HAND_VECTORS
from tests.golden.kio_vectors import KIO_VECTORS
from tests.golden.vectors import (
    CLIENT_ID,
    CORRELATION_ID,
    GOLDEN,
    REMOVED_NODE,
    EndpointRow,
    LeaderRow,
    Vector,
    golden_mapping,
    golden_target,
)

VECTORS = KIO_VECTORS + HAND_VECTORS
IDS = [v.name for v in VECTORS]


def _body_offset(v: Vector, frame: memoryview) -> int:
    if v.is_request:
        header = parse_request_header(frame)
        assert header.known
        assert (header.api_key, header.api_version) == (v.api_key, v.version)
        assert (header.correlation_id, header.client_id) == (CORRELATION_ID, CLIENT_ID)
        return header.body_offset
    versions = header_versions(v.api_key, v.version)
    assert versions is not None
    correlation_id, offset = parse_response_header(frame, versions[1])
    assert correlation_id == CORRELATION_ID
    return offset


def _endpoint_rows(result: WalkResult) -> list[EndpointRow]:
    return [(e.path, e.node_id, e.listener, e.host, e.port, e.rack) for e in result.endpoints]


def _leader_rows(result: WalkResult) -> list[LeaderRow]:
    return [
        (
            x.topic,
            None if x.topic_id is None else uuid.UUID(bytes=x.topic_id),
            x.partition,
            x.error_code,
            x.leader_id,
            x.leader_epoch,
            x.hint,
        )
        for x in result.leaders
    ]


def _check_walk(v: Vector, frame: memoryview, message_end: int) -> WalkResult:
    result = walk(frame, _body_offset(v, frame), v.api_key, v.version, v.is_request)
    assert result.end == message_end
    assert _endpoint_rows(result) == v.endpoints
    assert _leader_rows(result) == v.leaders
    return result


def test_inventory() -> None:
    """Every family of issue 2 §4 has a vector; the files on disk are exactly these."""
    have = {(v.api_key, v.kind) for v in VECTORS}
    endpoint_families = {
        (3, "response"), (10, "response"), (60, "response"), (0, "response"),
        (1, "response"), (78, "response"), (79, "response"), (52, "response"),
        (53, "response"), (54, "response"), (59, "response"), (53, "request"),
        (54, "request"), (55, "response"), (80, "request"), (82, "request"),
        (82, "response"), (62, "request"), (70, "request"), (4, "request"), (6, "request"),
    }  # fmt: skip
    leader_families = {(2, "response"), (23, "response"), (75, "response"), (56, "response")}
    assert endpoint_families | leader_families <= have
    assert len(set(IDS)) == len(IDS)
    files = {p.name for p in GOLDEN.glob("*.hex")}
    assert files == {f"{n}.hex" for n in IDS} | {f"{n}.rewritten.hex" for n in IDS}


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_walk_whole(v: Vector) -> None:
    wire = v.wire()
    assert struct.unpack_from(">i", wire)[0] == len(wire) - 4
    frame = memoryview(wire)[4:]
    _check_walk(v, frame, len(frame))


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_one_byte_at_a_time(v: Vector) -> None:
    wire = v.wire()
    reader = FrameReader(1 << 20)
    frames: list[memoryview] = []
    for i in range(len(wire)):
        got = reader.feed(wire[i : i + 1])
        if i < len(wire) - 1:
            assert got == []
        frames += got
    assert len(frames) == 1 and bytes(frames[0]) == wire[4:]
    assert reader.buffered == 0
    _check_walk(v, frames[0], len(wire) - 4)


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_trailing_bytes(v: Vector) -> None:
    wire = v.wire()
    # In the stream: the frame, then the first 7 bytes of the next one (stays buffered).
    reader = FrameReader(1 << 20)
    frames = reader.feed(wire + wire[:7])
    assert len(frames) == 1 and bytes(frames[0]) == wire[4:]
    assert reader.buffered == 7
    _check_walk(v, frames[0], len(wire) - 4)
    rest = reader.feed(wire[7:])
    assert len(rest) == 1 and bytes(rest[0]) == wire[4:]
    # Inside a buffer: bytes after the message are not part of it and survive a rewrite.
    junk = b"\xde\xad\xbe\xef"
    frame = memoryview(wire[4:] + junk)
    result = _check_walk(v, frame, len(wire) - 4)
    out = rewrite(frame, result.endpoints, golden_mapping)
    joined = b"".join(bytes(c) for c in out.chunks)
    expected = v.rewritten()[4:] + junk
    assert joined == struct.pack(">i", len(expected)) + expected


@pytest.mark.parametrize("v", VECTORS, ids=IDS)
def test_rewrite(v: Vector) -> None:
    wire = v.wire()
    frame = memoryview(wire)[4:]
    result = _check_walk(v, frame, len(frame))
    out = rewrite(frame, result.endpoints, golden_mapping)
    for chunk in out.chunks[1:]:  # unchanged regions are views of the input, not copies
        assert isinstance(chunk, bytes) or chunk.obj is wire
    joined = b"".join(bytes(c) for c in out.chunks)
    assert joined.hex() == v.rewritten().hex()
    assert out.size == len(joined) - 4
    removed = [e for e in result.endpoints if golden_mapping(e) is None]
    assert out.removed == removed
    assert len(out.rewritten) == len(result.endpoints) - len(removed)
    # The rewritten frame walks, and shows only kproxy addresses.
    new = memoryview(joined)[4:]
    again = walk(new, _body_offset(v, new), v.api_key, v.version, v.is_request)
    assert again.end == len(new)
    assert _leader_rows(again) == v.leaders
    for ep in again.endpoints:
        if v.api_key == 10 and ep.node_id == REMOVED_NODE:
            assert (ep.host, ep.port) == ("", -1)  # COORDINATOR_NOT_AVAILABLE, no address
        else:
            assert (ep.host, ep.port) == golden_mapping(ep)


@pytest.mark.parametrize("v", KIO_VECTORS, ids=[v.name for v in KIO_VECTORS])
def test_rewrite_decodes_with_kio(v: Vector) -> None:
    """kio decodes the rewritten frame as the original with the mapping applied."""
    kio_support = pytest.importorskip("tests.kio_support")
    from tests.kio_expected import apply_mapping, expected_endpoints

    cls = kio_support.kio_message_class(v.api_key, v.version, v.kind)
    if v.is_request:
        original = kio_support.decode_request_frame(v.wire())[4]
        rewritten = kio_support.decode_request_frame(v.rewritten())[4]
    else:
        original = kio_support.decode_response_frame(cls, v.wire())[1]
        rewritten = kio_support.decode_response_frame(cls, v.rewritten())[1]
    want = apply_mapping(original, lambda ep: golden_target(ep.node_id, ep.listener))
    assert rewritten == want
    assert [(e.path, e.node_id) for e in expected_endpoints(original)] == [
        (_snake(path), node_id) for path, node_id, *_ in v.endpoints
    ]


def _snake(path: str) -> str:
    from tests.kio_expected import kio_path

    return kio_path(path)


def test_an_endpoint_writes_an_ipv6_host_in_brackets() -> None:
    # `::1:9092` would read as one longer address (kproxy.protocol.hostport.format_host_port).
    from tests.session.frames import metadata_response

    frame = memoryview(metadata_response(1, [(1, "::1", 9092), (2, "b-2.invalid", 9093)]))[4:]
    _, body = parse_response_header(frame, 1)
    found = walk(frame, body, 3, 12, False)
    assert [repr(e).rsplit(" ", 1)[1] for e in found.endpoints] == [
        "[::1]:9092)",
        "b-2.invalid:9093)",
    ]


def test_the_committed_files_are_what_make_golden_writes() -> None:
    """Every vector on disk is its source (kio's encoding or the hand-written frame)
    regenerated byte for byte, so a vector and its table cannot drift apart."""
    from tests.golden.make_golden import build, hex_text

    files = build()
    assert sorted(files) == sorted(IDS + [f"{n}.rewritten" for n in IDS])
    for name, data in files.items():
        assert (GOLDEN / f"{name}.hex").read_text() == hex_text(data), name
