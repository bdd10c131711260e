"""Bytes after a response's message never reach the client.

They belong to no field, so no rewrite reaches them, and they could carry anything, a
broker's address among it. They are not refused either: librdkafka's mock cluster sends
one after every Metadata v13 response (kio refuses it: "1 trailing byte(s) after the
body"), and its clients read past it. A response gathered whole is cut to its message,
its frame size corrected: the client gets what the message alone would have given it.
A streamed one announced its frame size before its last bytes came, so they are covered
instead: its top-level tagged fields are padded over them, or, where no padding fits,
they become zeros (`kproxy.protocol.tagged_fit.cover_after`). Either way the step reports
them (`UpstreamStep.trimmed`). Messages by kio.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kproxy.protocol.apis import FETCH, METADATA, PRODUCE
from kproxy.session.steps import UpstreamStep
from tests.kio_support import decode_response_frame, encode_response_frame
from tests.session.fetch_frames import (
    ENDPOINT_VERSIONS,
    KIO_FETCH,
    RECORDS,
    STREAM_AFTER,
    answered,
    fetch_request,
    fetch_response,
    kproxy_view,
    without_padding,
)
from tests.session.frames import (
    metadata_request,
    metadata_response,
    produce_redirect,
    produce_request,
)

HOST = "broker-2.kafka.cluster.invalid"
GATHERED = 1 << 20  # a threshold no response here reaches: every one gathered whole


def _with_bytes_after(frame: bytes, after: bytes) -> bytes:
    body = frame[4:] + after
    return len(body).to_bytes(4, "big") + body


def _afters(frame: bytes) -> dict[str, bytes]:
    """What a broker might send after a message: the mock cluster's byte, two bytes (too
    few for any padding field), and the message's own body again, broker names and all."""
    return {"mock": b"\x00", "two": b"\x01\x02", "copy": frame[8:]}


def _feed(
    frame: bytes, request: bytes, cuts: list[int], stream_after: int
) -> tuple[bytes, UpstreamStep]:
    """The response fed in pieces cut at `cuts`: (all that reached the client, the last
    step)."""
    sent, step = answered(request, frame, cuts, stream_after)
    return b"".join(sent), step


# (api key, request, response naming the broker or not), each gathered whole
GATHERED_CASES: dict[str, tuple[int, bytes, bytes]] = {
    "metadata": (METADATA, metadata_request(5), metadata_response(5, [(2, HOST, 9092)])),
    "produce-redirect": (PRODUCE, produce_request(5, 1), produce_redirect(5, 2, HOST, 9092)),
    "fetch-plain": (
        FETCH,
        fetch_request(17, 5),
        encode_response_frame(fetch_response(17, RECORDS[1:]), 5),
    ),
    "fetch-redirect": (
        FETCH,
        fetch_request(17, 5),
        encode_response_frame(fetch_response(17, RECORDS[1:], 2, ((2, HOST, 9092),)), 5),
    ),
}


@pytest.mark.parametrize("case", GATHERED_CASES)
def test_a_gathered_response_is_cut_to_its_message(case: str) -> None:
    key, request, frame = GATHERED_CASES[case]
    alone, alone_step = _feed(frame, request, [], GATHERED)
    assert alone_step.close is None and alone_step.trimmed == []
    for name, after in _afters(frame).items():
        sent = _with_bytes_after(frame, after)
        # In one read (the fast lane's), in two, and cut where the message ends.
        for cuts in ([], [len(sent) // 2], [len(frame)]):
            out, step = _feed(sent, request, cuts, GATHERED)
            assert step.close is None, (name, cuts, step.close)
            assert out == alone, (name, cuts)
            assert step.trimmed == [(key, len(after))], (name, cuts)
            assert HOST.encode() not in out


def _tail_length(msg: Any, version: int) -> int:
    """The length of a Fetch message's top-level tagged section, by kio: one byte (no
    field) plus what its `NodeEndpoints` add; none before flexible versions."""
    if version < 12:
        return 0
    if version < 16:
        return 1
    bare = encode_response_frame(dataclasses.replace(msg, node_endpoints=()), 5)
    return 1 + len(encode_response_frame(msg, 5)) - len(bare)


def _message_sent(out: bytes, version: int, covered: int) -> bytes:
    """The message in a streamed frame whose last `covered` bytes are its tagged section
    over the broker's bytes after it: kproxy's padding left out, or its zeros, which
    must be all that follows the section (kio reads neither)."""
    if version >= 12:
        return without_padding(out, covered)
    assert out[len(out) - covered :] == bytes(covered)
    body = out[4 : len(out) - covered]
    return len(body).to_bytes(4, "big") + body


# Every version plain, and those with KIP-951's NodeEndpoints (v16+) naming the broker
STREAMED_CASES = [(v, False) for v in KIO_FETCH] + [(v, True) for v in ENDPOINT_VERSIONS]


@pytest.mark.parametrize(("version", "named"), STREAMED_CASES)
def test_a_streamed_fetch_response_covers_them_at_its_announced_length(
    version: int, named: bool
) -> None:
    endpoints = ((2, HOST, 9092),) if named else ()
    msg = fetch_response(version, RECORDS, 2 if named else None, endpoints)
    frame = encode_response_frame(msg, 5)
    tail = _tail_length(msg, version)
    cls = type(msg)
    for name, after in _afters(frame).items():
        sent = _with_bytes_after(frame, after)
        cuts = [*range(STREAM_AFTER + 4, len(frame), 50), len(frame)]
        out, step = _feed(sent, fetch_request(version, 5), cuts, STREAM_AFTER)
        assert step.close is None, (name, step.close)
        assert len(out) == len(sent) and out[:4] == sent[:4], name  # the size it announced
        assert HOST.encode() not in out, name
        assert step.trimmed == [(FETCH, len(after))], name
        message = _message_sent(out, version, tail + len(after))
        assert decode_response_frame(cls, message)[1] == kproxy_view(msg), name
