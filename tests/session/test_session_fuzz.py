"""The session under random traffic from both sides (hypothesis).

Valid, truncated, split and malformed frames, interleaved from the client and the
broker in any order: the session never raises (bad bytes become a close reason), never
holds more than the frame limit's worth of bytes, never lets more requests than the
limit into flight, and forgets everything once closed.

The client is read as the runtime reads it: not while a step has paused reading (its
bytes wait in the kernel meanwhile), and what waited is read at once when a step
resumes it. Reading is never paused inside a request already on its way to the broker:
the broker would wait for its end forever.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kproxy.session import ProxySession, SessionLimits
from kproxy.session.session import STREAM_REQUESTS_AFTER
from tests.session.frames import (
    NOW,
    address_map,
    metadata_request,
    metadata_response,
    produce_request,
    request_with,
)

MAX_FRAME = 1 << 17
MAX_IN_FLIGHT = 3
LARGE_ACKS_ALL = produce_request(15, acks=-1, records=b"\x02" * 70_000)
BROKERS = [(1, "broker-1.invalid", 9092), (2, "broker-2.invalid", 9092)]

CLIENT_PIECES = [
    *(metadata_request(corr) for corr in range(1, 7)),
    produce_request(7, acks=0),
    produce_request(8, acks=1),
    request_with(18, 0, 9),  # ApiVersions v0
    request_with(18, 99, 10),  # an ApiVersions version kproxy does not know
    request_with(62, 0, 11),  # the controller plane
    request_with(9999, 0, 12),  # no such API
    struct.pack(">i", MAX_FRAME + 1),  # over the limit
    struct.pack(">i", 70_000) + request_with(0, 9, 13)[4:] + b"\x00" * 2000,  # a large start
    produce_request(14, acks=1, records=b"\x01" * 90_000),  # a large request, whole
    LARGE_ACKS_ALL,
    b"\x16\x03\x01\x00\xa5",  # TLS
    b"\x00\x00",  # half a size
]
UPSTREAM_PIECES = [
    *(metadata_response(corr, BROKERS) for corr in range(1, 7)),
    metadata_response(99, BROKERS),  # nobody asked
    struct.pack(">i", 6) + struct.pack(">i", 1) + b"\xff\xff",  # malformed for Metadata
    struct.pack(">i", 2) + b"\x00\x00",  # shorter than a correlation id
]

actions = st.lists(
    st.tuples(
        st.sampled_from(["client", "upstream"]),
        st.integers(0, 64),  # which piece (modulo the side's pool)
        st.integers(0, 1 << 17),  # where to cut it (modulo its length)
        st.booleans(),  # whole, or only up to the cut
    ),
    max_size=40,
)


@pytest.mark.parametrize("max_in_flight", [1, MAX_IN_FLIGHT])
@settings(max_examples=1000, deadline=None)
@given(plan=actions)
# A large request whose first read fills the last slot, the rest in a second read.
@example(plan=[("client", CLIENT_PIECES.index(LARGE_ACKS_ALL), 70_000, True)])
def test_random_traffic_from_both_sides(
    max_in_flight: int, plan: list[tuple[str, int, int, bool]]
) -> None:
    mapping = address_map(max_node_id=1)
    s = ProxySession(mapping, SessionLimits(MAX_FRAME, max_in_flight))
    paused = False
    unread: list[bytes] = []  # client bytes sent while reading was paused
    for side, which, cut, whole in plan:
        pool = CLIENT_PIECES if side == "client" else UPSTREAM_PIECES
        piece = pool[which % len(pool)]
        at = cut % (len(piece) + 1)
        chunks = [piece[:at], piece[at:]] if whole else [piece[:at]]
        for chunk in chunks:
            if side == "client" and paused:
                unread.append(chunk)
                continue
            if side == "client":
                step = s.from_client(chunk, NOW)
                close, paused = step.close, paused or step.pause_reading
            else:
                up = s.from_upstream(chunk, NOW)
                while up.nodes_needing_listeners:
                    for node_id in up.nodes_needing_listeners:
                        mapping.listener_bound(node_id, 19000 + node_id)
                    up = s.listeners_opened(NOW)
                close = up.close
                if up.resume_reading and close is None:
                    paused = False
                    if unread:  # what waited in the kernel is read at once
                        step = s.from_client(b"".join(unread), NOW)
                        unread = []
                        close, paused = step.close, step.pause_reading
            assert not (paused and s.streaming_request and not s._waiting), (
                "reading paused inside a request already on its way"
            )
            assert len(s.inflight) <= max_in_flight
            assert s.client_bytes_pending <= MAX_FRAME + 4
            assert s.waiting_bytes <= MAX_FRAME + STREAM_REQUESTS_AFTER
            if close is not None:
                assert close.side in ("client", "upstream") and close.reason and close.message
                s.close()
                assert len(s.inflight) == 0 and s.inflight.unanswered == 0
                assert s.client_bytes_pending == 0 and not s._waiting and not s.held
                return
    s.close()
    assert len(s.inflight) == 0 and s.inflight.unanswered == 0
