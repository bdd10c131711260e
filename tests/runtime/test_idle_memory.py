"""What an idle connection's session keeps once its requests are answered.

Thousands of clients sit idle between requests behind a sidecar or a gateway, so what
each one holds is kproxy's resident memory (the benchmark's idle-connection target,
`bench/targets.py`). A session that has forwarded requests and their answers, whole or
split across reads (a size prefix cut in two, a body in pieces), keeps no buffer of a
frame it is not reading: its frame readers hold no empty list or bytearray.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Callable

from kproxy.protocol.frames import FrameReader
from kproxy.session import ProxySession, SessionLimits
from kproxy.session.admission import CLIENT_REFUSED_APIS
from kproxy.session.policy import ApiPolicy
from tests.session.frames import address_map
from tests.session.lane_driver import heartbeat_request, heartbeat_response

SESSIONS = 1000
# tracemalloc counts every allocation in the process while the objects are made, other
# threads' included (a test run's event writers): bytes per object allowed for those.
STRAY = 16


def _traced_per_object(make: Callable[[], object]) -> float:
    """Bytes still allocated per object `make` returns, over SESSIONS of them."""
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        kept = [make() for _ in range(SESSIONS)]
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - start - sys.getsizeof(kept)
    finally:
        tracemalloc.stop()
    assert len(kept) == SESSIONS
    return held / SESSIONS


def _reads(frames: list[bytes]) -> list[bytes]:
    """Three frames: the first read whole, the second cut inside its size prefix, the
    third cut inside its body."""
    first, second, third = frames
    return [first, second[:2], second[2:], third[:9], third[9:]]


def test_a_frame_reader_that_read_whole_and_split_frames_holds_no_buffer() -> None:
    reads = _reads([heartbeat_request(corr) for corr in (1, 2, 3)])

    def reader() -> FrameReader:
        r = FrameReader(1 << 20)
        for piece in reads:
            r.feed(piece)
        assert r.buffered == 0
        return r

    # The reader object and nothing else: no bytearray for a size prefix, no list of
    # pieces (the limit is the caller's int; the other fields are small ints, None and
    # the shared empty bytes).
    assert _traced_per_object(reader) <= sys.getsizeof(FrameReader(1 << 20)) + STRAY


def test_an_idle_session_holds_what_a_fresh_one_does_plus_its_answered_table() -> None:
    client_reads = _reads([heartbeat_request(corr) for corr in (1, 2, 3)])
    upstream_reads = _reads([heartbeat_response(corr) for corr in (1, 2, 3)])

    # What every connection shares, made once.
    addresses = address_map(open_nodes=(1, 2))
    limits = SessionLimits(1 << 20, 5)
    policy = ApiPolicy("test", frozenset())

    def fresh() -> ProxySession:
        return ProxySession(addresses, limits, CLIENT_REFUSED_APIS, policy, None)

    def idle() -> ProxySession:
        session = fresh()
        for piece in client_reads:
            assert session.from_client(piece, 0.0).close is None
        for piece in upstream_reads:
            step = session.from_upstream(piece, 0.0)
            assert step.close is None
        assert not session.answering and session.client_bytes_pending == 0
        return session

    fresh()  # the listener's routes (`Admission`), shared: built by its first session
    grown = _traced_per_object(idle) - _traced_per_object(fresh)
    # Answering leaves nothing: the in-flight table lets go of its dict once it is empty
    # (a dict keeps the room its entries took: 160 bytes after one), the readers keep no
    # buffer and no list of held responses or waiting requests is left behind.
    assert grown <= STRAY, grown


def test_a_fresh_session_is_its_readers_and_in_flight_table_and_nothing_more() -> None:
    addresses = address_map(open_nodes=(1, 2))
    limits = SessionLimits(1 << 20, 5)
    policy = ApiPolicy("test", frozenset())

    def fresh() -> ProxySession:
        return ProxySession(addresses, limits, CLIENT_REFUSED_APIS, policy, None)

    fresh()  # the listener's routes (`Admission`), shared: built by its first session
    # The session object, its two frame readers and its in-flight table; everything else
    # it refers to is shared (the empty bytes and str, None) or the caller's: no empty
    # dict of requests in flight, no empty list of held responses or waiting requests.
    one = fresh()
    parts = (one, one.client_reader, one.upstream_reader, one.inflight)
    assert _traced_per_object(fresh) <= sum(sys.getsizeof(p) for p in parts) + STRAY
