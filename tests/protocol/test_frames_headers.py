"""FrameReader and the request/response header parsers, on hand-written bytes.

The golden tests replay whole messages; these pin the framing and header rules
themselves (docs/protocol.md §3): any split of a stream gives the same frames, sizes are
refused before a body is buffered, other protocols are named, and every header version
parses, including keys and versions kproxy does not know.
"""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kproxy.protocol.errors import (
    FrameTooLarge,
    MalformedMessage,
    NegativeFrameSize,
    NotKafka,
    ProtocolError,
)
from kproxy.protocol.frames import FrameMore, FrameReader, FrameStart
from kproxy.protocol.headers import (
    parse_request_header,
    parse_response_header,
    response_correlation_id,
)


def framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def request_v1(api_key: int, version: int, corr: int, client_id: bytes | None) -> bytes:
    cid = b"\xff\xff" if client_id is None else struct.pack(">h", len(client_id)) + client_id
    return struct.pack(">hhi", api_key, version, corr) + cid


BODIES = [b"\x00" * 8, b"abcdefghijklmnop", b"", b"\x01" * 300, b"z"]
STREAM = b"".join(framed(b) for b in BODIES)


def feed_all(reader: FrameReader, chunks: list[bytes]) -> list[bytes]:
    out: list[bytes] = []
    for chunk in chunks:
        out.extend(bytes(f) for f in reader.feed(chunk))
    return out


# ---------------------------------------------------------------------------- framing


def test_whole_stream_in_one_chunk() -> None:
    assert feed_all(FrameReader(1000), [STREAM]) == BODIES


def test_a_dripped_frame_costs_bytes_not_objects() -> None:
    # 200,000 one-byte chunks of one frame: held in one bytearray, not 200,000 views.
    body = bytes(range(256)) * 781 + b"end!"
    reader = FrameReader(1 << 20)
    stream = framed(body)
    for i in range(len(stream) - 1):
        assert reader.feed(stream[i : i + 1]) == []
        assert len(reader._pieces or ()) <= 1
    assert reader.buffered == len(stream) - 1
    (frame,) = reader.feed(stream[-1:])
    assert bytes(frame) == body
    assert reader.buffered == 0


def test_large_chunks_are_joined_once_and_reused_buffers_are_copied() -> None:
    body = bytes(range(256)) * 1024  # 256 KiB, split in 64 KiB chunks
    stream = framed(body)
    reader = FrameReader(1 << 20)
    frames: list[memoryview] = []
    scratch = bytearray(65536)
    for start in range(0, len(stream), 65536):
        chunk = stream[start : start + 65536]
        if start // 65536 % 2:  # every other chunk from a buffer its owner reuses
            scratch[: len(chunk)] = chunk
            frames += reader.feed(memoryview(scratch)[: len(chunk)])
            scratch[:] = b"\xee" * len(scratch)
        else:
            frames += reader.feed(chunk)
    (frame,) = frames
    assert bytes(frame) == body


@given(
    bodies=st.lists(st.binary(max_size=3000), max_size=8),
    stream_after=st.integers(1, 600),
    cuts=st.lists(st.integers(0, 30000), max_size=40),
    decisions=st.lists(st.booleans(), max_size=20),
    as_bytearray=st.booleans(),
)
def test_cut_through_hands_over_every_byte_once_in_order(
    bodies: list[bytes],
    stream_after: int,
    cuts: list[int],
    decisions: list[bool],
    as_bytearray: bool,
) -> None:
    stream = b"".join(framed(b) for b in bodies)
    points = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    reader = FrameReader(1 << 20, stream_after=stream_after)
    got: list[bytes] = []
    current: bytearray | None = None  # a frame being handed over in pieces
    expected_size = -1
    gather_next = iter(decisions)
    for a, b in itertools.pairwise(points):
        chunk: bytes | bytearray = bytearray(stream[a:b]) if as_bytearray else stream[a:b]
        for item in reader.feed_through(chunk):
            if isinstance(item, FrameStart):
                assert current is None
                assert item.size >= stream_after and len(item.head) >= stream_after
                assert len(item.head) < item.size
                if next(gather_next, False):
                    reader.gather()  # this one comes whole later
                    continue
                current, expected_size = bytearray(item.head), item.size
            elif isinstance(item, FrameMore):
                assert current is not None
                current += item.data
                if len(current) == expected_size:
                    got.append(bytes(current))
                    current = None
            else:
                assert current is None
                got.append(bytes(item))
        if as_bytearray:
            chunk[:] = b"\xee" * len(chunk)  # the owner reuses its buffer
    assert current is None
    assert got == bodies
    assert reader.buffered == 0


_CHUNK = st.one_of(
    st.binary(max_size=40).map(framed),  # exactly one frame: feed_through's shortcut
    st.integers(41, 60).map(lambda n: framed(b"o" * n)),  # one frame, over the limit
    st.tuples(st.binary(max_size=30), st.integers(0, 33)).map(lambda t: framed(t[0])[: t[1]]),
    st.binary(max_size=12),  # anything: parts of frames, short chunks, bad sizes
    st.lists(st.binary(max_size=20), min_size=2, max_size=3).map(
        lambda bodies: b"".join(framed(b) for b in bodies)
    ),
    st.sampled_from([b"GET / HTTP/1.1\r\n", b"\x16\x03\x01\x02\x00\x01"]),
)


@given(st.booleans(), st.lists(_CHUNK, max_size=12))
@example(True, [framed(b"abc")[:5], framed(b"xy")])  # a whole-looking chunk mid-frame
def test_feed_through_without_streaming_is_feed(one_first: bool, chunks: list[bytes]) -> None:
    """The shortcut for a chunk that is exactly one frame gives what the general path
    gives: the same frames, `whole`, buffered count and errors, whatever came before
    (the first frame included: only the general path looks for another protocol)."""
    fast, plain = FrameReader(40), FrameReader(40)
    for chunk in [framed(b"first")] * one_first + chunks:
        try:
            expected = [bytes(f) for f in plain.feed(chunk)]
        except ProtocolError as exc:
            with pytest.raises(type(exc)):
                fast.feed_through(chunk)
            return
        items = fast.feed_through(chunk)
        assert all(type(f) is memoryview for f in items)
        assert [bytes(f) for f in items if isinstance(f, memoryview)] == expected
        assert fast.whole is plain.whole
        assert fast.buffered == plain.buffered


def whole_frames(reader: FrameReader, chunk: bytes) -> list[bytes]:
    """`feed_through`, every frame asked for whole (`gather` after a `FrameStart`)."""
    items = reader.feed_through(chunk)
    if any(type(f) is FrameStart for f in items):
        reader.gather()
    return [bytes(f) for f in items if type(f) is memoryview]


@given(st.integers(0, 60), st.booleans(), st.lists(_CHUNK, max_size=12))
@example(20, True, [framed(b"a" * 15)[:9], framed(b"a" * 15)[9:12], framed(b"a" * 15)[12:]])
def test_parts_kept_and_completed_are_what_feed_through_does(
    stream_after: int, one_first: bool, chunks: list[bytes]
) -> None:
    """Reading as the fast lane does (`small_read`, `taken` after a frame it joined,
    and `feed_through` for a read it declines) gives the same frames, errors and
    buffered count as `feed_through` alone: the lane takes no read that would be
    refused, and no part of a frame of ``stream_after`` bytes or more."""
    lane, plain = FrameReader(40, stream_after), FrameReader(40, stream_after)
    for chunk in [framed(b"first")] * one_first + chunks:
        try:
            expected = whole_frames(plain, chunk)
        except ProtocolError:
            assert lane.small_read(chunk) is False
            return
        read = lane.small_read(chunk)
        if read is True:
            assert expected == []
        elif read is not False:
            assert [framed(e) for e in expected] == [read]
            if read is not chunk:
                lane.taken()
        else:
            assert whole_frames(lane, chunk) == expected
        assert lane.buffered == plain.buffered


def test_gather_only_after_a_frame_start() -> None:
    """Asked for whole without a FrameStart, or once bytes after it were fed (its rest
    already handed over): a ProtocolError, which closes the connection."""
    reader = FrameReader(1000, stream_after=10)
    with pytest.raises(ProtocolError) as raised:
        reader.gather()
    assert raised.value.reason == "frame_not_gathered"
    assert [bytes(f) for f in reader.feed(framed(b"x" * 50))] == [b"x" * 50]
    (start,) = reader.feed_through(framed(b"y" * 100)[:40])
    assert isinstance(start, FrameStart)
    reader.feed_through(b"y" * 10)
    with pytest.raises(ProtocolError):
        reader.gather()


def test_cut_through_frame_truncated_by_the_peer_is_still_counted_as_buffered() -> None:
    reader = FrameReader(1000, stream_after=10)
    (start,) = reader.feed_through(framed(b"y" * 100)[:40])
    assert isinstance(start, FrameStart) and start.size == 100
    (more,) = reader.feed_through(b"y" * 30)
    assert isinstance(more, FrameMore)
    assert reader.buffered == 4 + 66


def test_one_byte_at_a_time() -> None:
    reader = FrameReader(1000)
    assert feed_all(reader, [STREAM[i : i + 1] for i in range(len(STREAM))]) == BODIES
    assert reader.buffered == 0


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_split_gives_the_same_frames(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(points)]
    assert feed_all(FrameReader(1000), chunks) == BODIES


def test_frames_inside_one_chunk_are_views_of_it() -> None:
    chunk = bytearray(STREAM)
    frames = FrameReader(1000).feed(chunk)
    assert all(f.obj is chunk for f in frames)  # no copy of a frame that arrived whole


def test_whole_is_the_chunk_only_when_it_was_exactly_one_frame() -> None:
    one = framed(b"body")
    reader = FrameReader(1000)
    assert reader.feed(one) == [memoryview(one)[4:]] and reader.whole is one
    # Two frames, part of a frame, the rest of one, a mutable buffer: nothing to reuse.
    cases = [[one + one], [one[:3], one[3:]], [one[:6], one[6:] + one], [bytearray(one)]]
    for chunks in cases:
        reader = FrameReader(1000)
        for chunk in chunks:
            reader.feed(chunk)
            assert reader.whole is None
    # A frame at a chunk's start whose chunk also began the next frame.
    reader = FrameReader(1000)
    reader.feed(one + one[:2])
    assert reader.whole is None
    reader.feed(one[2:])
    assert reader.whole is None


def test_incomplete_frame_is_held_until_complete() -> None:
    reader = FrameReader(1000)
    assert reader.feed(framed(b"hello")[:6]) == []
    assert reader.buffered == 6
    assert [bytes(f) for f in reader.feed(b"llo")] == [b"hello"]
    assert reader.buffered == 0


def test_frame_at_the_limit_is_accepted() -> None:
    assert feed_all(FrameReader(5), [framed(b"12345")]) == [b"12345"]


@pytest.mark.parametrize("split", [1, 2, 3, 4])
def test_oversized_frame_is_refused_from_its_size_alone(split: int) -> None:
    reader = FrameReader(5)
    prefix = struct.pack(">i", 6)
    reader.feed(framed(b"ok"))  # not the first frame: no other-protocol guess
    if split < 4:
        assert reader.feed(prefix[:split]) == []
    with pytest.raises(FrameTooLarge):
        reader.feed(prefix[split:] if split < 4 else prefix)
    assert reader.buffered <= 4  # nothing of the body was buffered


def test_negative_frame_size() -> None:
    with pytest.raises(NegativeFrameSize):
        FrameReader(1000).feed(struct.pack(">i", -1) + b"xxxx")


def test_tls_client_hello_on_a_plain_port() -> None:
    hello = bytes.fromhex("160301020001000200") + b"\x00" * 40
    with pytest.raises(NotKafka) as exc:
        FrameReader(1 << 20).feed(hello)
    assert exc.value.reason == "tls_on_plain_port"


@pytest.mark.parametrize("line", [b"GET / HTTP/1.1\r\n", b"POST /x HTTP/1.1\r\n"])
def test_http_on_a_kafka_port(line: bytes) -> None:
    with pytest.raises(NotKafka) as exc:
        FrameReader(1 << 20).feed(line)
    assert exc.value.reason == "http_on_kafka_port"


def test_errors_are_protocol_errors_with_bounded_reasons() -> None:
    reasons = set()
    for data in (struct.pack(">i", -5), struct.pack(">i", 1 << 30), b"\x16\x03\x01\x7f\xff"):
        with pytest.raises(ProtocolError) as exc:
            FrameReader(1 << 20).feed(data)
        reasons.add(exc.value.reason)
    assert reasons == {"negative_frame_size", "frame_too_large", "tls_on_plain_port"}


# ---------------------------------------------------------------------- request header


def test_request_header_v1() -> None:
    frame = memoryview(request_v1(3, 8, 77, b"app") + b"BODY")
    h = parse_request_header(frame)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (3, 8, 77, "app")
    assert (h.header_version, h.known) == (1, True)
    assert bytes(frame[h.body_offset :]) == b"BODY"


def test_request_header_v1_null_client_id() -> None:
    h = parse_request_header(memoryview(request_v1(0, 3, 5, None) + b"B"))
    assert h.client_id is None and h.body_offset == 10


def test_request_header_v2_skips_tagged_fields() -> None:
    # Metadata v12 uses header v2: client id (classic string) then tagged fields.
    tagged = b"\x02" + b"\x00\x03abc" + b"\x05\x01z"  # two tagged fields
    frame = memoryview(request_v1(3, 12, 9, b"c") + tagged + b"BODY")
    h = parse_request_header(frame)
    assert h.header_version == 2 and h.client_id == "c"
    assert bytes(frame[h.body_offset :]) == b"BODY"


def test_request_header_v0() -> None:
    # ControlledShutdown v0 is the one request with header v0: no client id.
    frame = memoryview(struct.pack(">hhi", 7, 0, 1) + b"BODY")
    h = parse_request_header(frame)
    assert (h.header_version, h.client_id, h.body_offset) == (0, None, 8)


@pytest.mark.parametrize(("api_key", "version"), [(999, 0), (3, 99), (-1, 0)])
def test_unknown_key_or_version_still_parses(api_key: int, version: int) -> None:
    h = parse_request_header(memoryview(request_v1(api_key, version, 42, b"x") + b"??"))
    assert (h.known, h.correlation_id, h.client_id, h.body_offset) == (False, 42, "x", -1)


@pytest.mark.parametrize(
    "frame",
    [
        b"\x00\x03\x00",  # shorter than key, version and correlation id
        struct.pack(">hhi", 3, 8, 1),  # no client id length
        struct.pack(">hhih", 3, 8, 1, 10) + b"abc",  # client id past the end
        struct.pack(">hhih", 3, 8, 1, -2),  # bad client id length
        struct.pack(">hhih", 3, 8, 1, 2) + b"\xff\xfe",  # not UTF-8
        request_v1(3, 12, 1, b"c") + b"\x01\x00\x7f",  # tagged field past the end
    ],
)
def test_malformed_request_headers(frame: bytes) -> None:
    with pytest.raises(MalformedMessage):
        parse_request_header(memoryview(frame))


# --------------------------------------------------------------------- response header


def test_response_header_v0_and_v1() -> None:
    frame = memoryview(struct.pack(">i", 7) + b"BODY")
    assert parse_response_header(frame, 0) == (7, 4)
    flexible = memoryview(struct.pack(">i", 8) + b"\x01\x00\x02hi" + b"BODY")
    corr, offset = parse_response_header(flexible, 1)
    assert corr == 8 and bytes(flexible[offset:]) == b"BODY"
    assert response_correlation_id(flexible) == 8


@pytest.mark.parametrize("frame", [b"", b"\x00\x00\x01"])
def test_response_without_correlation_id(frame: bytes) -> None:
    with pytest.raises(MalformedMessage):
        parse_response_header(memoryview(frame), 0)
    with pytest.raises(MalformedMessage):
        response_correlation_id(memoryview(frame))
