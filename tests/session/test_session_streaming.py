"""Large responses forwarded as they arrive (`kproxy.session.streaming`), against kio.

Fetch responses of every version kio has (4-18) are built by kio, fed to a session that
streams everything past 64 bytes, split at every byte, and decoded by kio again: the
client gets exactly the message a whole-frame rewrite gives (KIP-951 `NodeEndpoints`
rewritten, in the frame length announced before the tail arrived), its first bytes
before the broker's last, and the same leadership facts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproxy.protocol.apis import FETCH
from kproxy.protocol.frames import FrameStart
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.plan import Struct, plan_for, walked_versions
from kproxy.protocol.plan_codes import K_ENDPOINT, OP_ARRAY, OP_CARRAY, OP_NSTRUCT, OP_STRUCT
from kproxy.protocol.tagged_fit import PADDING_TAG, parse_tagged
from kproxy.runtime.mapping import AddressMap
from kproxy.session import ProxySession, UpstreamStep
from kproxy.session.inflight import InFlight
from kproxy.session.streaming import StreamedResponse, streamable
from tests.kio_expected import expected_leaders
from tests.kio_strategies import message_strategy
from tests.kio_support import decode_response_frame, encode_response_frame, kio_message_class
from tests.session.fetch_frames import (
    ENDPOINT_VERSIONS,
    KIO_FETCH,
    RECORDS,
    STREAM_AFTER,
    fetch_request,
    fetch_response,
    kproxy_view,
    streaming_session,
    through,
    without_padding,
)
from tests.session.frames import LATER, client, joined, open_listeners, request_with

# (broker host, what the tail becomes): kproxy says "127.0.0.1" (9 characters)
CASES = {
    "padded": ("broker-2.kafka.cluster.invalid", "padded"),
    "same-length": ("b-2.inval", "rewritten"),
    "dropped": ("b2", "dropped"),
}


# ------------------------------------------------------------------------------- the plans
def _endpoint_paths(plan: Struct, top: bool, path: str = "") -> list[str]:
    """Where endpoint structs sit in a plan: 'tagged' for a top-level tagged field."""
    found: list[str] = []
    fields, tagged, kind, *_ = plan
    if kind & K_ENDPOINT:
        found.append(path)
    subs = [(f, False) for f in fields] + [(f, True) for f in (tagged or {}).values()]
    for f, is_tag in subs:
        sub = None
        if f[0] in (OP_STRUCT, OP_NSTRUCT):
            sub = f[2]
        elif f[0] in (OP_ARRAY, OP_CARRAY) and f[2][0] == -1:
            sub = f[2][1]
        if sub is not None:
            where = "tagged" if (top and is_tag) else f"{path}/{f[3]}"
            found += _endpoint_paths(sub, False, where)
    return found


@pytest.mark.parametrize("version", walked_versions(FETCH, False))
def test_a_fetch_responses_endpoints_are_all_in_its_tail(version: int) -> None:
    # What streaming relies on: only the top-level tagged fields may change.
    plan = plan_for(FETCH, False, version)
    assert plan is not None
    assert set(_endpoint_paths(plan, True)) <= {"tagged"}
    assert streamable(FETCH, version)


def test_what_is_gathered_whole_and_what_streams() -> None:
    assert not streamable(3, 12)  # Metadata: endpoints anywhere
    assert not streamable(78, 1)  # ShareFetch: NodeEndpoints is not a tagged field
    assert not streamable(18, 3)  # ApiVersions is clamped
    assert streamable(9, 8)  # OffsetFetch: nothing to walk, passed on as it comes


# ------------------------------------------------------------------------------- KIP-951
@pytest.mark.parametrize("version", ENDPOINT_VERSIONS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_streamed_fetch_with_node_endpoints_at_every_split(version: int, case: str) -> None:
    host, outcome = CASES[case]
    msg = fetch_response(version, RECORDS, moved_to=2, endpoints=((2, host, 9092),))
    frame = encode_response_frame(msg, 5)
    cls = type(msg)
    tail_at = len(frame) - 40  # past the last record byte: the tail is well within 40
    for cut in range(1, len(frame)):
        sent, last = through(version, frame, [cut])
        out = b"".join(sent)
        # Streamed when the first read holds enough of the body; else gathered whole.
        streamed = cut >= STREAM_AFTER + 4
        assert last.streamed == ([(FETCH, outcome)] if streamed else []), cut
        expected = kproxy_view(msg)
        if streamed:
            assert len(out) == len(frame), cut
            if outcome == "dropped":
                expected = dataclasses.replace(msg, node_endpoints=())
        if streamed:
            out = without_padding(out, tail_length(version, frame))
        corr, got = decode_response_frame(cls, out)
        assert (corr, got) == (5, expected), cut
        assert host.encode() not in out
        (seen,) = last.responses
        assert [(o.partition, o.error_code, o.leader_id) for o in seen.leaders or []] == [
            (0, 0, None),
            (1, 0, None),
            (2, 6, 2),
        ]
        dropped = streamed and outcome == "dropped"
        assert seen.endpoint_nodes == (frozenset() if dropped else {2})
        if streamed and cut <= tail_at:
            # the first piece went out before the last byte came in
            assert sent[0] and frame.startswith(sent[0])


def tail_length(version: int, frame: bytes) -> int:
    """How long a Fetch response's tail (its top-level tagged fields) is, found by
    following the frame as a stream does."""
    view = memoryview(frame)[4:]
    req = InFlight(FETCH, version, 1, "app", 0.0)
    body = parse_response_header(view, 1)[1]
    start = FrameStart(view[:STREAM_AFTER], len(view))
    stream = StreamedResponse(req, start, body, 0.0, STREAM_AFTER)
    stream.begin(view[:STREAM_AFTER])
    stream.more(view[STREAM_AFTER:])
    skim = stream.skim
    assert skim is not None and skim.in_tail
    return len(skim.skeleton) - skim.tail_start


@pytest.mark.parametrize("version", ENDPOINT_VERSIONS)
def test_a_padded_tail_is_the_rewritten_fields_then_one_ignored_field(version: int) -> None:
    msg = fetch_response(version, RECORDS, 2, ((2, "broker-2.kafka.cluster.invalid", 9092),))
    frame = encode_response_frame(msg, 5)
    sent, _ = through(version, frame, [200])
    out = b"".join(sent)
    n = tail_length(version, frame)
    assert out[:-n] == frame[:-n]  # everything before the tail as the broker sent it
    rewritten = encode_response_frame(kproxy_view(msg), 5)
    fields = parse_tagged(out[-n:])
    assert [tag for tag, _ in fields] == [0, PADDING_TAG]
    assert parse_tagged(rewritten[-(n - len(frame) + len(rewritten)) :])[0] == fields[0]
    assert set(fields[1][1]) <= {0}


def test_a_tail_one_padding_field_cannot_fill_gets_two() -> None:
    """A varint's width leaves lengths no single padding field has (131 bytes: a 127-byte
    field takes 130, a 128-byte one 132): such a tail gets two, and still reads as the
    rewritten response once they are skipped."""
    two_fields = 0
    for n in range(120, 160):  # broker host lengths around the gap
        msg = fetch_response(16, RECORDS, 2, ((2, "b" * n, 9092),))
        frame = encode_response_frame(msg, 5)
        sent, last = through(16, frame, [100])
        out, tail = b"".join(sent), tail_length(16, frame)
        assert last.streamed == [(FETCH, "padded")]
        tags = [tag for tag, _ in parse_tagged(out[len(out) - tail :])]
        two_fields += tags[-2:] == [PADDING_TAG - 1, PADDING_TAG]
        _, got = decode_response_frame(type(msg), without_padding(out, tail))
        assert got == kproxy_view(msg), n
    assert two_fields == 1


@pytest.mark.parametrize("version", ENDPOINT_VERSIONS)
def test_an_unmapped_node_is_removed_from_the_tail_and_reported(version: int) -> None:
    endpoints = ((2, "broker-2.invalid", 9092), (50, "broker-50.invalid", 9092))
    msg = fetch_response(version, RECORDS, 2, endpoints)
    frame = encode_response_frame(msg, 5)
    sent, last = through(version, frame, [100, 900])
    out = b"".join(sent)
    expected = kproxy_view(dataclasses.replace(msg, node_endpoints=msg.node_endpoints[:1]))
    unpadded = without_padding(out, tail_length(version, frame))
    assert decode_response_frame(type(msg), unpadded) == (5, expected)
    assert b"broker-50" not in out
    assert last.unmapped == [50]
    assert last.streamed == [(FETCH, "padded")]


@dataclasses.dataclass
class NewNodeStream:
    """A Fetch response streamed in two reads whose tail names node 3, which has no
    listener yet: `asked` is the step that asks for it."""

    session: ProxySession
    mapping: AddressMap
    msg: Any
    frame: bytes
    first: UpstreamStep
    asked: UpstreamStep


def stream_naming_a_new_node(version: int) -> NewNodeStream:
    s, mapping = streaming_session(open_nodes=(1,))
    client(s, fetch_request(version, 5))
    msg = fetch_response(version, RECORDS, 3, ((3, "broker-3.kafka.cluster.invalid", 9092),))
    frame = encode_response_frame(msg, 5)
    first = s.from_upstream(frame[:300], LATER)
    asked = s.from_upstream(frame[300:], LATER)
    return NewNodeStream(s, mapping, msg, frame, first, asked)


@pytest.mark.parametrize("version", ENDPOINT_VERSIONS)
def test_a_new_node_holds_the_tail_until_its_listener_is_open(version: int) -> None:
    streamed = stream_naming_a_new_node(version)
    s, mapping, msg, frame = streamed.session, streamed.mapping, streamed.msg, streamed.frame
    first, last = streamed.first, streamed.asked
    assert last.nodes_needing_listeners == [3] and not last.responses
    assert s.answering  # its tail is not out yet
    n = tail_length(version, frame)
    # Out already: all but the tail and the held-back end (the last STREAM_AFTER bytes,
    # which wait for the walk as the tail does).
    assert joined(first.to_client) + joined(last.to_client) == frame[: -max(n, STREAM_AFTER)]
    open_listeners(mapping, [3])
    released = s.listeners_opened(LATER)
    out = joined(first.to_client) + joined(last.to_client) + joined(released.to_client)
    unpadded = without_padding(out, n)
    assert decode_response_frame(type(msg), unpadded) == (5, kproxy_view(msg))
    assert [seen.api_key for seen in released.responses] == [FETCH]
    assert not s.answering


@pytest.mark.parametrize("version", ENDPOINT_VERSIONS)
def test_the_step_that_asked_for_a_listener_is_continued_with_its_bytes_first(
    version: int,
) -> None:
    # The runtime hands back the step that asked: the records it already carries (read
    # with the tail) go out first, then the rewritten tail, in one write.
    streamed = stream_naming_a_new_node(version)
    s, mapping, msg, frame = streamed.session, streamed.mapping, streamed.msg, streamed.frame
    first, asked = streamed.first, streamed.asked
    carried = joined(asked.to_client)
    assert asked.nodes_needing_listeners == [3] and carried
    open_listeners(mapping, [3])
    released = s.listeners_opened(LATER, asked)
    assert released is asked and not released.nodes_needing_listeners
    assert joined(released.to_client).startswith(carried)
    out = joined(first.to_client) + joined(released.to_client)
    unpadded = without_padding(out, tail_length(version, frame))
    assert decode_response_frame(type(msg), unpadded) == (5, kproxy_view(msg))
    assert [seen.api_key for seen in released.responses] == [FETCH]


# ------------------------------------------------------------------------- every version
@pytest.mark.parametrize("version", KIO_FETCH)
def test_streamed_fetch_without_endpoints_is_forwarded_byte_for_byte(version: int) -> None:
    msg = fetch_response(version, RECORDS, moved_to=2 if version >= 12 else None)
    frame = encode_response_frame(msg, 5)
    for cut in range(1, len(frame)):
        sent, last = through(version, frame, [cut])
        assert b"".join(sent) == frame, cut
        streamed = cut >= STREAM_AFTER + 4
        assert last.streamed == ([(FETCH, "none")] if streamed else []), cut
    whole, _ = through(version, frame, [], stream_after=0)
    one_by_one, _ = through(version, frame, list(range(1, len(frame))))
    assert b"".join(one_by_one) == b"".join(whole) == frame


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_fetch_responses_stream_as_they_are_gathered(data: st.DataObject) -> None:
    version = data.draw(st.sampled_from(list(KIO_FETCH)), label="version")
    msg = data.draw(message_strategy(kio_message_class(FETCH, version, "response")))
    frame = encode_response_frame(msg, 5)
    cuts = sorted(
        set(data.draw(st.lists(st.integers(1, len(frame) - 1), max_size=6), label="cuts"))
    )
    sent, streamed = through(version, frame, cuts, stream_after=8)
    gathered_sent, gathered = through(version, frame, [], stream_after=0)
    out, whole = b"".join(sent), b"".join(gathered_sent)
    if not streamed.streamed:  # it arrived whole after all
        assert out == whole
    elif not getattr(msg, "node_endpoints", ()):
        assert out == frame
    else:
        ((_, outcome),) = streamed.streamed
        assert len(out) == len(frame)
        cls = type(msg)
        _, got = decode_response_frame(cls, without_padding(out, tail_length(version, frame)))
        _, expected = decode_response_frame(cls, whole)
        if outcome == "dropped":
            expected = dataclasses.replace(expected, node_endpoints=())
        assert got == expected
    (s_seen,), (g_seen,) = streamed.responses, gathered.responses
    assert s_seen.leaders == g_seen.leaders
    assert [(o.partition, o.error_code) for o in s_seen.leaders or []] == [
        (e.partition, e.error_code) for e in expected_leaders(msg)
    ]


# ----------------------------------------------------------------------- order and errors
def test_responses_around_a_streamed_one_keep_their_order() -> None:
    s, _ = streaming_session()
    for corr in (1, 2, 3):
        client(s, fetch_request(17, corr))
    small = encode_response_frame(fetch_response(17, [b"x"]), 1)
    big = encode_response_frame(fetch_response(17, RECORDS), 2)
    after = encode_response_frame(fetch_response(17, [b"y"]), 3)
    data = small + big + after
    out = b""
    for cut in range(0, len(data), 97):
        out += joined(s.from_upstream(data[cut : cut + 97], LATER).to_client)
    assert out == data
    assert not s.answering


def test_a_response_that_runs_out_closes_the_upstream_side() -> None:
    s, _ = streaming_session()
    client(s, fetch_request(17, 5))
    frame = bytearray(encode_response_frame(fetch_response(17, RECORDS), 5))
    frame[4 + 4 + 1 + 2 + 4 + 4] = 0x7F  # header, throttle, error, session: topics count
    step = s.from_upstream(bytes(frame[:200]), LATER)
    assert step.close is None and step.to_client  # it looked right so far
    step = s.from_upstream(bytes(frame[200:]), LATER)
    assert step.close is not None and step.close.side == "upstream"
    assert step.to_client == []


def test_a_length_below_null_is_refused_as_the_walker_refuses_it() -> None:
    """A streamed body the skim calls plain is not walked, so the skim refuses what the
    walker refuses: here a topic name of length -2 (0xFFFE), its characters removed, so
    that what follows still reads as a plain message when the length is taken as none
    (found by tools/fuzz_protocol.py)."""
    s, _ = streaming_session()
    client(s, fetch_request(11, 5))
    frame = encode_response_frame(fetch_response(11, RECORDS), 5)
    name = 4 + 4 + 4 + 2 + 4 + 4  # size, header, throttle, error, session, topics count
    assert frame[name : name + 8] == b"\x00\x06orders"
    body = frame[4:name] + b"\xff\xfe" + frame[name + 8 :]
    data = len(body).to_bytes(4, "big") + body
    step = s.from_upstream(data[:200], LATER)  # streamed: larger than STREAM_AFTER
    assert step.close is not None and step.close.side == "upstream"
    assert step.to_client == []


def test_a_response_kproxy_does_not_walk_is_passed_on_as_it_comes() -> None:
    s, _ = streaming_session()
    client(s, request_with(9, 8, 9, b"\x00"))  # OffsetFetch v8
    body = (9).to_bytes(4, "big") + b"\x00" + bytes(500)
    frame = len(body).to_bytes(4, "big") + body
    first = s.from_upstream(frame[:100], LATER)
    assert joined(first.to_client) == frame[:100]
    last = s.from_upstream(frame[100:], LATER)
    assert joined(last.to_client) == frame[100:]
    assert last.streamed == [(9, "none")]
