"""Bytes after a response's message are passed on as they came.

librdkafka's mock cluster sends one after every Metadata v13 response (kio refuses it:
"1 trailing byte(s) after the body"), and clients read past such bytes: refusing them
would cut those clients off. They belong to no field, so kproxy rewrites the message
before them and leaves them as they are, whether the response is gathered whole, passes
the fast lane, or is streamed; only a streamed tail that must be rewritten cannot keep
them. Messages by kio.
"""

from __future__ import annotations

from kproxy.session.records import SessionClose
from tests.kio_support import encode_response_frame
from tests.session.fetch_frames import (
    RECORDS,
    STREAM_AFTER,
    fed_in_pieces,
    fetch_request,
    fetch_response,
    streaming_session,
)
from tests.session.frames import (
    KPROXY_HOST,
    client,
    metadata_request,
    metadata_response,
)

HOST = "broker-2.kafka.cluster.invalid"
AFTER = b"\x00"  # what the mock cluster sends after a Metadata v13 message


def _with_bytes_after(frame: bytes) -> bytes:
    body = frame[4:] + AFTER
    return len(body).to_bytes(4, "big") + body


def _feed(
    frame: bytes, request: bytes, cuts: list[int], stream_after: int
) -> tuple[bytes, SessionClose | None]:
    """The response fed in pieces cut at `cuts`: (all that reached the client, a close)."""
    s, mapping = streaming_session(stream_after)
    client(s, request)
    sent, step = fed_in_pieces(s, mapping, frame, cuts)
    return b"".join(sent), step.close


def _framed(out: bytes) -> bool:
    return int.from_bytes(out[:4], "big") == len(out) - 4


def test_a_metadata_response_with_a_byte_after_its_message_is_rewritten_and_passed_on() -> None:
    frame = _with_bytes_after(metadata_response(5, [(2, HOST, 9092)]))
    for cuts in ([], [len(frame) // 2]):
        out, close = _feed(frame, metadata_request(5), cuts, 1 << 20)
        assert close is None, close
        assert HOST.encode() not in out and KPROXY_HOST.encode() in out
        assert out.endswith(AFTER) and _framed(out)


def test_a_plain_fetch_response_with_a_byte_after_its_message_is_passed_on() -> None:
    frame = _with_bytes_after(encode_response_frame(fetch_response(17, RECORDS[1:]), 5))
    for cuts in ([], [len(frame) // 2]):  # in one read (the fast lane's), and in two
        out, close = _feed(frame, fetch_request(17, 5), cuts, 1 << 20)
        assert (out, close) == (frame, None)


def test_a_streamed_plain_fetch_response_with_a_byte_after_its_message_is_passed_on() -> None:
    frame = _with_bytes_after(encode_response_frame(fetch_response(17, RECORDS), 5))
    cuts = list(range(STREAM_AFTER + 4, len(frame), 50))
    out, close = _feed(frame, fetch_request(17, 5), cuts, STREAM_AFTER)
    assert (out, close) == (frame, None)


def test_a_streamed_fetch_tail_to_rewrite_with_a_byte_after_it_is_refused() -> None:
    """The one exception: a streamed tail to be rewritten is refitted at the length the
    frame announced, from its tagged fields alone, and bytes after them leave that
    undone. The broker side is closed and the held tail never goes out."""
    named = fetch_response(17, RECORDS, 2, ((2, HOST, 9092),))
    frame = _with_bytes_after(encode_response_frame(named, 5))
    cuts = list(range(STREAM_AFTER + 4, len(frame), 50))
    out, close = _feed(frame, fetch_request(17, 5), cuts, STREAM_AFTER)
    assert close is not None and close.side == "upstream"
    assert out and HOST.encode() not in out  # the records went out, the tail did not
