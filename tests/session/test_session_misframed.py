"""A response its broker framed wrongly shows the client no broker name.

Every byte of a response that names a broker (Metadata's Brokers, a Produce or Fetch
redirect's KIP-951 `NodeEndpoints`) is changed in turn to each value a length, a count,
a tag or an error code turns on, and the response fed to a session: gathered whole, and
for Fetch streamed in pieces. Whatever the client gets, and whether or not the broker
side is closed, the broker's name is never in it. A lowered count leaves the name in
bytes after the message, which are cut or covered (`test_session_bytes_after`); a
lengthened records size makes the name look like records, which the held-back end of
a streamed response keeps until the walk has failed (`StreamedResponse`).

The one change left out: `NodeEndpoints`' own tag made another. A tag kproxy does not
know is passed byte for byte, as KIP-482 has every reader keep it (README, "What kproxy
does to the bytes"), so that byte is where a broker could hide a name in plain sight.
Messages by kio.
"""

from __future__ import annotations

import dataclasses

import pytest
from kio.schema.errors import ErrorCode

from tests.kio_support import encode_response_frame
from tests.property.scan_support import one_byte_changes
from tests.session.fetch_frames import (
    ENDPOINT_VERSIONS,
    RECORDS,
    STREAM_AFTER,
    fed_in_pieces,
    fetch_request,
    fetch_response,
    streaming_session,
)
from tests.session.frames import (
    client,
    metadata_request,
    metadata_response,
    produce_redirect,
    produce_request,
    produce_response,
)

HOST = "broker-2.kafka.cluster.invalid"
NAME = b"broker-"  # what any part of the name that reached the client would show
BODY = 4 + 4 + 1  # size, correlation id and the header's tagged fields: left as they are


def _out(frame: bytes, request: bytes, cuts: list[int], stream_after: int) -> bytes:
    s, mapping = streaming_session(stream_after)
    client(s, request)
    return b"".join(fed_in_pieces(s, mapping, frame, cuts)[0])


def _endpoints_tag_at(bare: bytes) -> int:
    """Where `NodeEndpoints`' tag lies in a message whose top-level tagged fields (which
    end it) hold that field alone, given the frame kio makes without it: there the
    fields' count 0 is the last byte, so the tag comes right after it."""
    return len(bare)


def _leaks(
    frame: bytes, request: bytes, cut_every: int, stream_after: int, tag_at: int
) -> list[tuple[int, int]]:
    """(where, what) for each one-byte change whose output shows a broker's name."""
    found: list[tuple[int, int]] = []
    for at, changed in one_byte_changes(frame, BODY):
        if at == tag_at:
            continue
        cuts = list(range(stream_after + 4, len(changed), cut_every)) if cut_every else []
        if NAME in _out(changed, request, cuts, stream_after):
            found.append((at, changed[at]))
    return found


@pytest.mark.parametrize("version", ENDPOINT_VERSIONS)
@pytest.mark.parametrize("streamed", [False, True], ids=["gathered", "streamed"])
def test_a_fetch_redirect_changed_anywhere_shows_no_broker_name(
    version: int, streamed: bool
) -> None:
    msg = fetch_response(version, RECORDS, moved_to=2, endpoints=((2, HOST, 9092),))
    frame = encode_response_frame(msg, 5)
    stream_after, cut_every = (STREAM_AFTER, 50) if streamed else (1 << 20, 0)
    tag_at = _endpoints_tag_at(
        encode_response_frame(dataclasses.replace(msg, node_endpoints=()), 5)
    )
    assert frame[tag_at - 1 : tag_at + 1] == b"\x01\x00"  # one field, tag 0 (KIP-951)
    assert _leaks(frame, fetch_request(version, 5), cut_every, stream_after, tag_at) == []


def test_a_produce_redirect_changed_anywhere_shows_no_broker_name() -> None:
    frame = produce_redirect(5, 2, HOST, 9092)
    tag_at = _endpoints_tag_at(produce_response(5, ErrorCode.not_leader_or_follower, (2, 7)))
    assert frame[tag_at - 1 : tag_at + 1] == b"\x01\x00"
    assert _leaks(frame, produce_request(5, 1), 0, 1 << 20, tag_at) == []


def test_a_metadata_response_changed_anywhere_shows_no_broker_name() -> None:
    frame = metadata_response(5, [(2, HOST, 9092), (3, HOST.replace("2", "3"), 9093)])
    assert _leaks(frame, metadata_request(5), 0, 1 << 20, -1) == []
