"""Reads the hot path makes inside a frame without decoding it: a Produce request's acks
(which the fast lane reads) behind a transactional id of any length, cut anywhere; and
the integer reads of the lane and the response scans, against struct's."""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.produce.v10.request import ProduceRequest as ProduceRequestV10

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.headers import parse_request_header
from kproxy.protocol.primitives import int16_at, int16_in, int32_at
from kproxy.protocol.requests import produce_acks
from tests.kio_support import encode_request_frame


@pytest.mark.parametrize("id_length", [None, 0, 5, 126, 127, 200, 20_000])
@pytest.mark.parametrize("acks", [-1, 0, 1])
def test_produce_acks_after_a_transactional_id_of_any_length(
    id_length: int | None, acks: int
) -> None:
    # Flexible Produce (v9+): the id's length is a varint of one byte below 127, more above.
    msg = ProduceRequestV10(
        transactional_id=None if id_length is None else "t" * id_length,
        acks=acks,
        timeout=datetime.timedelta(seconds=1),
        topic_data=(),
    )
    frame = memoryview(encode_request_frame(msg, 1, "producer"))[4:]
    hdr = parse_request_header(frame)
    assert produce_acks(frame, hdr.body_offset, len(frame), hdr.api_version) == acks
    # Cut anywhere, with a next frame's bytes after the cut: the same answer as cut alone
    # (what follows `stop` in a read of several frames is never read as this one's).
    whole = bytes(frame)

    def acks_of(buf: bytes, stop: int) -> int | str:
        try:
            return produce_acks(buf, hdr.body_offset, stop, hdr.api_version)
        except MalformedMessage:
            return "malformed"

    for cut in range(hdr.body_offset, min(len(whole), hdr.body_offset + 8 + (id_length or 0))):
        alone = acks_of(whole[:cut], cut)
        assert acks_of(whole[:cut] + b"\x00\x01" * 8, cut) == alone, cut


@given(st.binary(min_size=0, max_size=12), st.integers(0, 12))
def test_the_lane_s_integer_reads_equal_struct_s(data: bytes, pos: int) -> None:
    """`int16_at` / `int32_at` (and `int16_in`, on bytes and on a memoryview) read
    what struct's big-endian formats read, and fail (IndexError) where struct would
    find the bytes too short."""
    reads: list[tuple[Callable[[Any, int], int], str, bytes | memoryview]] = [
        (int16_at, ">h", data),
        (int32_at, ">i", data),
        (int16_in, ">h", data),
        (int16_in, ">h", memoryview(data)),
    ]
    for read, fmt, buf in reads:
        if pos + struct.calcsize(fmt) <= len(data):
            assert read(buf, pos) == struct.unpack_from(fmt, data, pos)[0]
        else:
            with pytest.raises(IndexError):
                read(buf, pos)
