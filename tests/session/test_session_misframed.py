"""A response its broker framed wrongly shows the client no broker name.

Every byte of a response that names a broker (Metadata's Brokers, a Produce or Fetch
redirect's KIP-951 `NodeEndpoints`) is changed in turn to each value a length, a count,
a tag or an error code turns on, and the response fed to a session: gathered whole, and
for Fetch streamed in pieces. Whatever the client gets, and whether or not the broker
side is closed, the broker's name is never in it. A lowered count leaves the name in
bytes after the message, which are cut or covered (`test_session_bytes_after`); a
lengthened records size makes the name look like records, which the held-back end of
a streamed response keeps until the walk has failed (`StreamedResponse`).

The same holds for every golden response vector that names a node (tests/golden/:
Metadata v0-13, FindCoordinator, DescribeCluster, ShareFetch, ShareAcknowledge, the
KRaft quorum's messages), gathered as kproxy gathers them.

The one change left out: an endpoint-bearing tagged field's own tag made another
(`NodeEndpoints`, KIP-951 and KIP-853). A tag kproxy does not know is passed byte for
byte, as KIP-482 has every reader keep it (docs/architecture.md, "What kproxy does to
the bytes"), so that byte is where a broker could hide a name in plain sight. Messages
by kio, and the golden vectors (kio's, or written by hand from the schemas).
"""

from __future__ import annotations

import dataclasses
import struct

import pytest
from kio.schema.errors import ErrorCode

from kproxy.protocol.apis import PRODUCE, header_versions
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.walker import walk
from kproxy.session import ProxySession, SessionLimits
from tests.golden.hand_vectors import HAND_VECTORS
from tests.golden.kio_vectors import KIO_VECTORS
from tests.golden.vectors import CORRELATION_ID, Vector
from tests.kio_support import encode_response_frame
from tests.property.scan_support import one_byte_changes
from tests.session.fetch_frames import (
    ENDPOINT_VERSIONS,
    RECORDS,
    STREAM_AFTER,
    answered,
    fed_in_pieces,
    fetch_request,
    fetch_response,
)
from tests.session.frames import (
    address_map,
    client,
    metadata_request,
    metadata_response,
    produce_redirect,
    produce_request,
    produce_response,
    request_with,
)

HOST = "broker-2.kafka.cluster.invalid"
NAME = b"broker-"  # what any part of the name that reached the client would show
BODY = 4 + 4 + 1  # size, correlation id and the header's tagged fields: left as they are


def _out(frame: bytes, request: bytes, cuts: list[int], stream_after: int) -> bytes:
    return b"".join(answered(request, frame, cuts, stream_after)[0])


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


# The golden responses that name a node, and the request each answers: the golden
# request of the same (api, version) where there is one (kproxy walks those that carry
# endpoints), else a header alone (kproxy reads no more of the others).
VECTORS = KIO_VECTORS + HAND_VECTORS
NAMING = [v for v in VECTORS if not v.is_request and v.endpoints]
REQUESTS = {(v.api_key, v.version): v.wire() for v in VECTORS if v.is_request}
MARKS = (b"broker-", b"controller-", b".internal")  # the vectors' hosts: no one change spoils two


def _golden_request(v: Vector) -> bytes:
    versions = header_versions(v.api_key, v.version)
    assert versions is not None
    body = b"\x00" if versions[0] == 2 else b""  # a header v2's tagged fields
    if v.api_key == PRODUCE:  # acks=1 read (a flexible version's): a null transactional
        # id, acks, the timeout, no topics and no tagged field
        body += b"\x00" + struct.pack(">hi", 1, 1000) + b"\x01\x00"
    return REQUESTS.get((v.api_key, v.version)) or request_with(
        v.api_key, v.version, CORRELATION_ID, body
    )


def _tag_bytes(v: Vector) -> set[int]:
    """Where the tags of the vector's endpoint-bearing tagged fields lie, found by the
    walk (each tag one byte, right before the field's size)."""
    frame = memoryview(v.wire())[4:]
    versions = header_versions(v.api_key, v.version)
    assert versions is not None
    body = parse_response_header(frame, versions[1])[1]
    found = walk(frame, body, v.api_key, v.version, False)
    return {4 + t.size_start - 1 for ep in found.endpoints for t in ep.tagged}


@pytest.mark.parametrize("v", NAMING, ids=[v.name for v in NAMING])
def test_a_golden_response_changed_anywhere_shows_no_node_name(v: Vector) -> None:
    frame, request, tags = v.wire(), _golden_request(v), _tag_bytes(v)
    mapping = address_map(open_nodes=(1, 2, 3))
    limits = SessionLimits(1 << 20, 100, 1 << 20)

    def shown(response: bytes) -> bytes:
        # Every API served: the quorum's messages come through a controller listener.
        s = ProxySession(mapping, limits, frozenset())
        step = client(s, request)
        assert step.close is None and step.to_upstream, step.close
        return b"".join(fed_in_pieces(s, mapping, response, [])[0])

    assert not any(mark in shown(frame) for mark in MARKS)  # rewritten, unchanged
    leaks = [
        (at, changed[at])
        for at, changed in one_byte_changes(frame, 4 + 4)
        if at not in tags and any(mark in shown(changed) for mark in MARKS)
    ]
    assert leaks == []
