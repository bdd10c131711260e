"""The fast lane (`kproxy.session.fast_lane`) against the general path, on the same
reads (hypothesis; every frame built by kio or by hand, never by kproxy).

Two sessions are given the same reads from both sides, whole, split or run together:
one as the runtime drives it (the lane first, the general path for what it leaves),
one through the general path alone. After every read both must have sent the same
bytes each way, admitted the same requests, reported the same responses with the same
facts and latencies, paused, resumed and closed alike, and be left in the same state.
A lane that took a read the general path would have treated otherwise (walked,
rewritten, refused, held, closed on) fails here. Of a read of several whole frames the
lane takes those at the front one by one, each as if read alone: the general path is
then given that read cut so, each frame it took alone and the rest in one read.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import event, given, settings, target
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from tests.session.fetch_frames import fetch_request
from tests.session.frames import (
    metadata_request,
    metadata_response,
    produce_redirect,
    produce_request,
    produce_response,
    request_with,
)
from tests.session.lane_driver import (
    BROKERS,
    HEARTBEAT,
    Driven,
    client_piece,
    fetch,
    heartbeat_request,
    heartbeat_response,
    reads_of,
    streamed_round_trip,
    upstream_piece,
)

# A client request kind -> the upstream kinds that answer it (for a round trip).
ANSWERS = {0: (0, 1, 2), 1: (0, 1, 2), 3: (3,), 4: (3,), 5: (3,), 6: (3,), 8: (4,)}
ANSWERS |= {13: (3,), 14: (3,), 15: (3,), 16: (8, 9, 10), 17: (11, 12)}
PIECES = st.lists(st.tuples(st.integers(0, 17), st.integers(1, 5)), min_size=1, max_size=3)
ROUND_TRIP = st.tuples(st.just("round trip"), st.sampled_from(sorted(ANSWERS)), st.integers(0, 2))
# Round trips pipelined: the requests in one read, then their answers in one read.
PIPELINED = st.tuples(
    st.just("pipelined"),
    st.lists(
        st.tuples(st.sampled_from(sorted(ANSWERS)), st.integers(0, 2)), min_size=2, max_size=4
    ),
)
# A Fetch round trip whose response (past the streaming threshold, 64 KiB, by 35 KiB of
# records or more) arrives cut into reads: the lane sends on those inside its records.
STREAMED = st.tuples(
    st.just("streamed"),
    # Fetch versions (NodeEndpoints from v16, KIP-951), or 0: a Heartbeat answered with
    # that many bytes, which nothing walks (streamed without a skim).
    st.sampled_from([0, 12, 16, 17, 18]),
    st.integers(100_000, 200_000),  # record bytes
    st.booleans(),  # a partition moved: CurrentLeader (and NodeEndpoints) in the response
    st.integers(1, 12),  # reads of about equal size (the runtime reads up to 256 KiB)
    st.integers(0, 999),  # where the first cut falls in the first read (per mille)
    st.lists(st.integers(1, 300), max_size=3),  # more cuts, this far from the end
)
# A round trip whose response arrives in parts, cut at these per-mille points (a broker
# writes a Fetch response in two or three: the lane keeps the parts, sends it whole).
IN_PARTS = st.tuples(
    st.just("in parts"),
    st.sampled_from(sorted(ANSWERS)),
    st.integers(0, 2),
    st.lists(st.integers(0, 1000), min_size=1, max_size=4),
)
ACTIONS = st.lists(
    st.one_of(
        # Any pieces from one side: whole, split or run together, valid or not.
        st.tuples(
            st.sampled_from(["client", "upstream"]),
            PIECES,
            st.integers(0, 1 << 16),  # where a split falls
            st.sampled_from([0, 0, 0, 1, 2]),  # alone (most reads), split, run together
        ),
        # A round trip: a valid request and an answer to it, each read alone (drawn
        # more often: the lane's case, and what keeps a connection open to the end).
        ROUND_TRIP,
        ROUND_TRIP,
        ROUND_TRIP,
        PIPELINED,
        STREAMED,
        IN_PARTS,
        IN_PARTS,
    ),
    min_size=3,
    max_size=30,
)


@settings(max_examples=600, deadline=None)
@given(
    ACTIONS,
    st.sampled_from([2, 3, 100]),
    st.sampled_from([frozenset(), frozenset({HEARTBEAT})]),
    st.booleans(),
)
def test_the_lane_and_the_general_path_agree(
    actions: list[tuple[Any, ...]],
    max_in_flight: int,
    denied: frozenset[int],
    awaits: bool,
) -> None:
    fast = Driven(True, max_in_flight, denied, awaits)
    general = Driven(False, max_in_flight, denied, awaits)
    now = 1.0
    for i, action in enumerate(actions):
        reads: list[tuple[str, bytes]]
        if action[0] == "round trip":
            _, kind, answer = action
            corr = 1000 + i  # not among the pieces' correlation ids
            answers = ANSWERS[kind]
            reads = [
                ("client", client_piece(kind, corr)),
                ("upstream", upstream_piece(answers[answer % len(answers)], corr)),
            ]
        elif action[0] == "pipelined":
            trips = [
                (kind, answer, 100_000 + 8 * i + j) for j, (kind, answer) in enumerate(action[1])
            ]
            requests = b"".join(client_piece(kind, corr) for kind, _, corr in trips)
            responses = [
                upstream_piece(ANSWERS[kind][answer % len(ANSWERS[kind])], corr)
                for kind, answer, corr in trips
            ]
            reads = [("client", requests), ("upstream", b"".join(responses))]
        elif action[0] == "in parts":
            _, kind, answer, cuts = action
            corr = 1000 + i
            answers = ANSWERS[kind]
            response = upstream_piece(answers[answer % len(answers)], corr)
            at = sorted({0, len(response), *(len(response) * c // 1000 for c in cuts)})
            reads = [("client", client_piece(kind, corr))]
            reads += [("upstream", response[a:b]) for a, b in itertools.pairwise(at)]
        elif action[0] == "streamed":
            reads = streamed_round_trip(*action[1:], corr=1000 + i)
        else:
            side, picks, cut, mode = action
            make = client_piece if side == "client" else upstream_piece
            pieces = [make(kind, corr) for kind, corr in picks]
            reads = [(side, data) for data in reads_of(pieces, cut, mode)]
        for side, data in reads:
            now += 0.001
            passed, kept, completed = fast.passed, fast.kept, fast.completed
            got = fast.client(data, now) if side == "client" else fast.upstream(data, now)
            if fast.passed > passed:
                event("the lane sent on a read inside a streamed response")
            if fast.kept > kept:
                event("the lane kept part of a small response")
            if fast.completed > completed:
                event("the lane sent a small response read in parts")
            # The same read, every frame of it on the general path.
            assert got == general.reads(side, [data], now)
            if fast.leading:
                event("the lane took frames of a read of several")
            assert fast.state() == general.state()
            if general.closed:  # the runtime closes the pair: the next one starts afresh
                fast = Driven(True, max_in_flight, denied, awaits, fast.taken)
                general = Driven(False, max_in_flight, denied, awaits)
                break
    event("the lane took a read" if fast.taken else "the lane took no read")
    target(float(fast.taken), label="reads the lane took")


def pair(lane: Driven, request: bytes, response: bytes) -> int:
    """A request and its response each read alone: how many the lane took."""
    before = lane.taken
    lane.client(request, 1.0)
    lane.upstream(response, 1.5)
    return lane.taken - before


def warmed(max_in_flight: int = 100, denied: frozenset[int] = frozenset()) -> Driven:
    """A lane session past each side's first frame (checked by the general path)."""
    driven = Driven(True, max_in_flight, denied, awaits=False)
    assert pair(driven, heartbeat_request(100), heartbeat_response(100)) == 0
    return driven


# They count what the lane took (`CountingLane`): the pure build's instrument.
counts = pytest.mark.pure_python


@counts
def test_the_lane_takes_the_commonest_reads() -> None:
    driven = warmed()
    assert pair(driven, produce_request(1, acks=1), produce_response(1)) == 2
    assert pair(driven, heartbeat_request(2), heartbeat_response(2)) == 2
    assert pair(driven, heartbeat_request(3, client_id=None), heartbeat_response(3)) == 2
    # A small Fetch response with nothing to act on, flexible or not.
    for corr, version in ((4, 17), (5, 11)):
        assert pair(driven, fetch_request(version, corr), fetch(corr, version, "plain")) == 2
    assert len(driven.session.inflight) == 0


def in_parts(driven: Driven, response: bytes, *cuts: int) -> bytes:
    """`response` read in parts, cut at `cuts`: what the client was sent of it."""
    at = [0, *cuts, len(response)]
    return b"".join(driven.upstream(response[a:b], 1.5)[1] for a, b in itertools.pairwise(at))


@counts
def test_the_lane_sends_a_small_response_read_in_parts_whole() -> None:
    """As a broker writes a Fetch response (its header, the records, the fields after
    them), kproxy reads it in parts: the lane keeps them and sends the response whole
    once its last part is in, when it has nothing to act on, and leaves the last part
    to the general path otherwise."""
    driven = Driven(True, 100, frozenset(), awaits=False)
    # The connection's first request, and the first part of its first response, go to
    # the general path, which checks the size of each stream's first frame; the lane
    # takes the rest.
    for corr, version in ((1, 17), (2, 17), (3, 11)):
        assert driven.client(fetch_request(version, corr), 1.0)[1]
        response = fetch(corr, version, "plain")
        assert in_parts(driven, response, 40, len(response) - 10) == response
    assert (driven.kept, driven.completed, driven.taken) == (5, 3, 5)
    moved = fetch(4, 17, "moved")
    driven.client(fetch_request(17, 4), 1.0)
    sent = in_parts(driven, moved, 40, len(moved) - 10)
    assert (driven.kept, driven.completed, driven.taken) == (7, 3, 6)
    assert b"broker-2.invalid" not in sent and len(driven.session.inflight) == 0


@counts
def test_the_lane_records_each_request_s_own_client_id() -> None:
    """The lane decodes a client id only when it differs from the last one it saw."""
    driven = warmed()
    inflight = driven.session.inflight
    for corr, client_id in enumerate(["app", "apq", "apq", "", None, "\u00e4pp", "app"], 1):
        taken = driven.taken
        driven.client(heartbeat_request(corr, client_id), 1.0)
        assert driven.taken == taken + 1
        req = inflight.peek(corr)
        assert req is not None and req.client_id == client_id, corr


@counts
def test_the_lane_leaves_what_the_general_path_must_decide() -> None:
    driven = warmed()
    # A response kproxy walks (its request, carrying no endpoint, is taken).
    assert pair(driven, metadata_request(1), metadata_response(1, BROKERS)) == 1
    # A request kproxy answers itself, or that expects no response.
    assert pair(driven, request_with(18, 0, 2), b"") == 0
    driven.client(produce_request(2, acks=0), 1.0)
    assert driven.taken == 1
    # A Produce response with an error or a leader hint is walked: the request is taken.
    errored = produce_response(3, ErrorCode.not_enough_replicas)
    assert pair(driven, produce_request(3, acks=1), errored) == 1
    redirect = produce_redirect(4, 2, "broker-2.invalid", 9092)
    assert pair(driven, produce_request(4, acks=1), redirect) == 1
    assert driven.taken == 3
    # So is a Fetch response with an error or (KIP-951) a partition moved.
    for corr, version, how in ((5, 17, "error"), (6, 17, "moved"), (7, 11, "error")):
        assert pair(driven, fetch_request(version, corr), fetch(corr, version, how)) == 1
    assert driven.taken == 6
    # One frame in two reads.
    driven.client(heartbeat_request(8), 1.0)
    driven.upstream(heartbeat_response(8)[:7], 1.0)
    assert driven.taken == 7


@counts
def test_the_lane_leaves_a_client_awaiting_a_success_to_the_walk() -> None:
    driven = Driven(True, 100, frozenset(), awaits=True)
    pair(driven, heartbeat_request(100), heartbeat_response(100))
    assert pair(driven, produce_request(1, acks=1), produce_response(1)) == 1
    assert pair(driven, fetch_request(17, 2), fetch(2, 17, "plain")) == 1


@counts
def test_the_lane_leaves_a_denied_api_and_the_last_in_flight_slot() -> None:
    driven = warmed(denied=frozenset({HEARTBEAT}))
    assert driven.client(heartbeat_request(1), 1.0)[6] == [HEARTBEAT]  # refused
    assert driven.taken == 0
    full = warmed(max_in_flight=2)
    full.client(heartbeat_request(1), 1.0)
    assert full.client(heartbeat_request(2), 1.0)[4] is True  # the general path paused
    assert full.taken == 1


@counts
@pytest.mark.parametrize("corr", [-1, -5, -(1 << 31), (1 << 31) - 1])
def test_the_lane_keys_a_signed_correlation_id_as_the_general_path_does(corr: int) -> None:
    """The lane reads the correlation id inline; a negative one must key the in-flight
    table as the general path's struct read does, so that a request either path took
    is answered through the other."""
    lane_first = warmed()
    lane_first.client(heartbeat_request(corr), 1.0)
    assert lane_first.taken == 1
    split = heartbeat_response(corr)  # its size read in two parts: the general path's
    lane_first.upstream(split[:2], 1.0)
    assert lane_first.upstream(split[2:], 1.0)[4][0][0] == HEARTBEAT
    assert lane_first.taken == 1 and len(lane_first.session.inflight) == 0
    general_first = warmed()
    split = heartbeat_request(corr)
    general_first.client(split[:2], 1.0)
    assert general_first.client(split[2:], 1.0)[3] == [(HEARTBEAT, len(split) - 4)]
    assert general_first.taken == 0
    assert general_first.upstream(heartbeat_response(corr), 1.0)[4][0][0] == HEARTBEAT
    assert general_first.taken == 1 and len(general_first.session.inflight) == 0


@counts
@pytest.mark.parametrize(("key", "version"), [(-1, 0), (-HEARTBEAT, 4), (HEARTBEAT, -1)])
def test_the_lane_leaves_an_api_key_or_version_with_its_top_bit_set(key: int, version: int) -> None:
    driven = warmed()
    assert driven.client(request_with(key, version, 1), 1.0)[7] is not None  # closed
    assert driven.taken == 0 and len(driven.session.inflight) == 0


@counts
def test_the_lane_takes_the_whole_frames_at_the_front_of_one_read() -> None:
    """A read of several whole frames: the lane takes them one by one up to the first it
    leaves; that one and the rest go to the general path, in order."""
    driven = warmed()
    requests = [heartbeat_request(1), produce_request(2, acks=1), metadata_request(3)]
    requests.append(heartbeat_request(4))
    sent = driven.client(b"".join(requests), 1.0)
    assert driven.leading == 4
    assert sent[1] == b"".join(requests) and [key for key, _ in sent[3]] == [12, 0, 3, 12]
    # acks=0 awaits no response: the general path's, with what follows it.
    requests = [heartbeat_request(5), produce_request(6, acks=0), heartbeat_request(7)]
    sent = driven.client(b"".join(requests), 1.0)
    assert driven.leading == 1
    assert sent[1] == b"".join(requests) and [key for key, _ in sent[3]] == [12, 0, 12]
    # The Metadata response is walked: the general path's, with what follows it.
    answers = [heartbeat_response(1), produce_response(2), metadata_response(3, BROKERS)]
    answers.append(heartbeat_response(4))
    got = driven.upstream(b"".join(answers), 2.0)
    assert driven.leading == 2
    assert got[1].startswith(answers[0] + answers[1])
    assert [facts[0] for facts in got[4]] == [12, 0, 3, 12]
    driven.upstream(heartbeat_response(5) + heartbeat_response(7), 2.0)
    assert driven.leading == 2 and len(driven.session.inflight) == 0
    # The split frame is the general path's; the whole frames before it are the lane's.
    driven.client(heartbeat_request(8) + heartbeat_request(9)[:9], 3.0)
    assert driven.leading == 1
    driven.client(heartbeat_request(9)[9:] + heartbeat_request(10), 3.0)
    assert driven.leading == 0 and len(driven.session.inflight) == 3


@counts
@pytest.mark.parametrize("version", [0, 12, 16, 17, 18])
def test_the_lane_sends_on_only_the_reads_inside_a_streamed_response_s_records(
    version: int,
) -> None:
    """A large response in reads of 20 KB, its last 300 bytes a byte at a time, and 300
    bytes about where its held-back end begins (`StreamedResponse`: the last 64 KiB of a
    skimmed response wait for its walk): the lane sends on the reads inside its records
    (or inside all of it, for a response nothing walks), short of its end and of the
    held-back end, and leaves every other read to the general path; both paths send the
    same bytes alike."""
    fast, general = warmed(), Driven(False, 100, frozenset(), awaits=False)
    pair(general, heartbeat_request(100), heartbeat_response(100))
    around_held = list(range(65_536 - 150, 65_536 + 150))
    cuts = list(range(1, 301)) + around_held
    reads = streamed_round_trip(version, 300_000, True, 15, 0, cuts, corr=9)
    for side, data in reads:
        got = fast.client(data, 1.0) if side == "client" else fast.upstream(data, 2.0)
        assert got == general.reads(side, [data], 2.0 if side == "upstream" else 1.0)
        assert fast.state() == general.state()
    assert not fast.closed and fast.session.stream is None and not fast.session.answering
    # Sent on: from the second read after the one that began the stream (64 KiB of body
    # in hand), each read that ends before the records do and the held-back end begins
    # (or before the frame ends, for a response nothing walks).
    response = b"".join(data for side, data in reads if side == "upstream")
    records = response.find(b"r" * 300_000)
    inside = min(records + 300_000, len(response) - 65_536 + 1) if version else len(response)
    ends = list(itertools.accumulate(len(data) for side, data in reads if side == "upstream"))
    began = next(i for i, end in enumerate(ends) if end >= 4 + 65_536)
    assert fast.passed == sum(1 for end in ends[began + 2 :] if end < inside) > 3
