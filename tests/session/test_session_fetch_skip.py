"""A plain Fetch response (every partition's ErrorCode 0, no KIP-951 `CurrentLeader`, no
`NodeEndpoints`) is forwarded without a walk, unless its client waits for a success to
end a redirect's recovery: a streamed one's skeleton is not walked
(`kproxy.session.streaming`), and a small one, gathered whole, is not walked either
(`kproxy.protocol.fetch_scan`). Anything else is walked as before. Messages by kio,
split anywhere."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kproxy.protocol.apis import FETCH
from kproxy.protocol.plan import Struct, plan_for, walked_versions
from kproxy.protocol.plan_codes import (
    OP_ARRAY,
    OP_CARRAY,
    OP_NSTRUCT,
    OP_STRUCT,
    R_ERROR,
    R_PARTITION,
    R_TOPIC_ID,
    R_TOPIC_NAME,
)
from kproxy.protocol.walker import LeaderObservation
from tests.kio_strategies import message_strategy
from tests.kio_support import encode_response_frame, kio_message_class
from tests.session.fetch_frames import (
    ENDPOINT_VERSIONS,
    KIO_FETCH,
    RECORDS,
    fetch_request,
    fetch_response,
    streaming_session,
    through,
)
from tests.session.frames import (
    LATER,
    client,
)

STREAM_AFTER = 8
GATHER_ALL = 1 << 30  # a threshold no test frame reaches: every response gathered whole


def streamed(
    version: int,
    frame: bytes,
    cuts: list[int],
    waiting: set[str],
    stream_after: int = STREAM_AFTER,
) -> tuple[bytes, Any]:
    """The frame through a session that asks whether its client ("app") awaits a
    success, cut at `cuts`: (bytes out, the last step)."""
    sent, step = through(version, frame, cuts, stream_after, waiting)
    return b"".join(sent), step


def gathered(version: int, frame: bytes, waiting: set[str], cuts: list[int] | None = None) -> Any:
    """The frame gathered whole (one read, or cut at `cuts`): the last step."""
    out, step = streamed(version, frame, cuts or [], waiting, GATHER_ALL)
    assert out == frame
    assert step.streamed == []
    return step


# ----------------------------------------------------------------------------- the plans
def _reported_roles(plan: Struct) -> set[int]:
    """The roles of the fields the walker reads outside any tagged field."""
    roles: set[int] = set()
    for f in plan[0]:
        roles.add(f[1])
        if f[0] in (OP_STRUCT, OP_NSTRUCT):
            roles |= _reported_roles(f[2])
        elif f[0] in (OP_ARRAY, OP_CARRAY) and f[2][0] == -1:
            roles |= _reported_roles(f[2][1])
    return roles - {0}


@pytest.mark.parametrize("version", walked_versions(FETCH, False))
def test_outside_its_tagged_fields_a_fetch_response_tells_only_errors(version: int) -> None:
    # What makes "plain" exact: the skim checks every ErrorCode and every tagged field
    # the walker looks into; nothing else outside them could make an observation count.
    plan = plan_for(FETCH, False, version)
    assert plan is not None
    assert _reported_roles(plan) <= {R_ERROR, R_PARTITION, R_TOPIC_NAME, R_TOPIC_ID}


# ----------------------------------------------------------------------------- examples
@pytest.mark.parametrize("version", KIO_FETCH)
def test_a_plain_streamed_fetch_response_is_not_walked(version: int) -> None:
    frame = encode_response_frame(fetch_response(version, RECORDS), 5)
    out, last = streamed(version, frame, [100], waiting=set())
    assert out == frame
    assert last.streamed == [(FETCH, "none")]
    (seen,) = last.responses
    assert seen.leaders is None  # not walked: nothing in it for the leader table


@pytest.mark.parametrize("cuts", [None, [9], [50, 700]])
@pytest.mark.parametrize("version", KIO_FETCH)
def test_a_plain_gathered_fetch_response_is_not_walked(version: int, cuts: list[int]) -> None:
    frame = encode_response_frame(fetch_response(version, RECORDS), 5)
    (seen,) = gathered(version, frame, set(), cuts).responses
    assert seen.leaders is None


@pytest.mark.parametrize("version", KIO_FETCH)
def test_a_gathered_response_is_walked_for_a_client_awaiting_a_success(version: int) -> None:
    frame = encode_response_frame(fetch_response(version, RECORDS), 5)
    (seen,) = gathered(version, frame, {"app"}).responses
    assert [(o.partition, o.error_code) for o in seen.leaders or []] == [(0, 0), (1, 0)]


@pytest.mark.parametrize("version", [v for v in KIO_FETCH if v >= 12])
def test_a_gathered_leader_hint_is_walked_and_its_endpoints_rewritten(version: int) -> None:
    endpoints = ((2, "b-2.inval", 9092),) if version >= 16 else ()
    msg = fetch_response(version, RECORDS, moved_to=2, endpoints=endpoints)
    out, last = streamed(version, encode_response_frame(msg, 5), [], set(), GATHER_ALL)
    assert b"b-2.inval" not in out
    (seen,) = last.responses
    assert [(o.partition, o.leader_id) for o in seen.leaders or []] == [
        (0, None),
        (1, None),
        (2, 2),
    ]
    assert seen.rewritten == (1 if version >= 16 else 0)


@pytest.mark.parametrize("version", KIO_FETCH)
def test_a_client_awaiting_a_success_has_it_walked(version: int) -> None:
    frame = encode_response_frame(fetch_response(version, RECORDS), 5)
    out, last = streamed(version, frame, [100], waiting={"app"})
    assert out == frame
    (seen,) = last.responses
    assert [(o.partition, o.error_code) for o in seen.leaders or []] == [(0, 0), (1, 0)]


@pytest.mark.parametrize("version", KIO_FETCH)
def test_an_error_is_always_walked(version: int) -> None:
    msg = fetch_response(version, RECORDS)
    topic = msg.responses[0]
    failed = dataclasses.replace(topic.partitions[1], error_code=ErrorCode.offset_out_of_range)
    msg = dataclasses.replace(
        msg, responses=(dataclasses.replace(topic, partitions=(topic.partitions[0], failed)),)
    )
    frame = encode_response_frame(msg, 5)
    out, last = streamed(version, frame, [100], waiting=set())
    assert out == frame
    (seen,) = last.responses
    assert [(o.partition, o.error_code) for o in seen.leaders or []] == [(0, 0), (1, 1)]
    (seen,) = gathered(version, frame, set()).responses
    assert [(o.partition, o.error_code) for o in seen.leaders or []] == [(0, 0), (1, 1)]


@pytest.mark.parametrize("version", [v for v in KIO_FETCH if v >= 12])
def test_a_leader_hint_is_always_walked(version: int) -> None:
    # KIP-951: CurrentLeader, here with NOT_LEADER_OR_FOLLOWER and (v16+) no endpoints
    frame = encode_response_frame(fetch_response(version, RECORDS, moved_to=2), 5)
    _, last = streamed(version, frame, [100], waiting=set())
    (seen,) = last.responses
    assert [(o.partition, o.leader_id) for o in seen.leaders or []] == [
        (0, None),
        (1, None),
        (2, 2),
    ]


@pytest.mark.parametrize("version", [v for v in KIO_FETCH if v >= 12])
def test_a_leader_hint_without_an_error_is_walked(version: int) -> None:
    # Brokers send CurrentLeader with an error, but the walker reports it on its own.
    msg = fetch_response(version, RECORDS)
    topic = msg.responses[0]
    first = topic.partitions[0]
    hint = dataclasses.replace(first.current_leader, leader_id=3, leader_epoch=9)
    hinted = (dataclasses.replace(first, current_leader=hint), *topic.partitions[1:])
    msg = dataclasses.replace(msg, responses=(dataclasses.replace(topic, partitions=hinted),))
    frame = encode_response_frame(msg, 5)
    _, last = streamed(version, frame, [100], waiting=set())
    for step in (last, gathered(version, frame, set())):
        (seen,) = step.responses
        assert [(o.partition, o.error_code, o.leader_id) for o in seen.leaders or []] == [
            (0, 0, 3),
            (1, 0, None),
        ]


@pytest.mark.parametrize("version", [v for v in KIO_FETCH if v >= 16])
def test_node_endpoints_alone_are_walked_and_rewritten(version: int) -> None:
    msg = fetch_response(version, RECORDS, endpoints=((2, "b-2.inval", 9092),))
    out, last = streamed(version, encode_response_frame(msg, 5), [100], waiting=set())
    assert b"b-2.inval" not in out
    assert last.streamed == [(FETCH, "rewritten")]
    (seen,) = last.responses
    assert seen.rewritten == 1
    out, last = streamed(version, encode_response_frame(msg, 5), [], set(), GATHER_ALL)
    assert b"b-2.inval" not in out
    (seen,) = last.responses
    assert seen.rewritten == 1


@pytest.mark.parametrize("waiting", [set(), {"app"}])
@pytest.mark.parametrize("version", [v for v in KIO_FETCH if v >= 12])
def test_too_many_tagged_fields_are_refused_walked_or_not(version: int, waiting: set[str]) -> None:
    # The walker's bound on a struct's tagged fields holds for a skipped walk too: the
    # last partition's tagged section (its third-last byte: the topic's and the
    # message's follow, both empty) gets 65 fields of tags no Fetch version defines.
    frame = encode_response_frame(fetch_response(version, RECORDS), 5)
    assert frame.endswith(b"\x00\x00\x00")
    body = frame[4:-3] + bytes([65]) + b"".join(bytes([tag, 0]) for tag in range(10, 75))
    frame = len(body + b"\x00\x00").to_bytes(4, "big") + body + b"\x00\x00"
    for stream_after in (STREAM_AFTER, GATHER_ALL):
        s, _ = streaming_session(stream_after, awaiting_success=waiting)
        client(s, fetch_request(version, 5))
        assert s.from_upstream(frame[:100], LATER).close is None
        step = s.from_upstream(frame[100:], LATER)
        assert step.close is not None and step.close.reason == "too_many_tagged_fields"


# ------------------------------------------------------------------------------ property
def _calmed(msg: Any, errors: bool, hints: bool, endpoints: bool) -> Any:
    """The message with every ErrorCode 0, no CurrentLeader, no NodeEndpoints: each of
    the three as asked, so that any one of them may be all that is left."""
    topics = []
    for topic in msg.responses:
        parts = []
        for p in topic.partitions:
            if errors:
                p = dataclasses.replace(p, error_code=ErrorCode.none)
            if hints and hasattr(p, "current_leader"):  # its default is not sent (KIP-482)
                default = {f.name: f.default for f in dataclasses.fields(p)}["current_leader"]
                p = dataclasses.replace(p, current_leader=default)
            parts.append(p)
        topics.append(dataclasses.replace(topic, partitions=tuple(parts)))
    msg = dataclasses.replace(msg, responses=tuple(topics))
    if endpoints and hasattr(msg, "node_endpoints"):
        msg = dataclasses.replace(msg, node_endpoints=())
    return msg


def _tells_nothing(leaders: list[LeaderObservation], msg: Any) -> bool:
    """What the walk found would change nothing for a client awaiting no success."""

    def quiet(o: LeaderObservation) -> bool:
        return o.error_code == 0 and o.leader_id is None and o.leader_epoch is None

    return all(quiet(o) for o in leaders) and not getattr(msg, "node_endpoints", ())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_walk_is_skipped_exactly_when_it_would_tell_nothing(data: st.DataObject) -> None:
    # Half of them with KIP-951's NodeEndpoints (v16+)
    versions = st.sampled_from(list(KIO_FETCH)) | st.sampled_from(ENDPOINT_VERSIONS)
    version = data.draw(versions, label="version")
    msg = data.draw(message_strategy(kio_message_class(FETCH, version, "response")))
    calm = data.draw(st.tuples(st.booleans(), st.booleans(), st.booleans()), label="calmed")
    msg = _calmed(msg, *calm)
    frame = encode_response_frame(msg, 5)
    # Streamed (the first read holds enough for it to be), or gathered whole from any
    # reads: the skim decides in the one, the scan (kproxy.protocol.fetch_scan) in the
    # other.
    stream_after = data.draw(st.sampled_from([STREAM_AFTER, GATHER_ALL]), label="threshold")
    first = data.draw(st.integers(min(STREAM_AFTER + 4, len(frame) - 1), len(frame) - 1))
    later = data.draw(st.lists(st.integers(first, len(frame) - 1), max_size=3), label="cuts")
    cuts = sorted({first, *later})
    out, skipping = streamed(version, frame, cuts, set(), stream_after)
    walked_out, walking = through(version, frame, cuts, stream_after=stream_after)
    assert out == b"".join(walked_out)  # the bytes are the same either way
    assert bool(skipping.streamed) == (stream_after == STREAM_AFTER)
    (seen,), (walked,) = skipping.responses, walking.responses
    assert walked.leaders is not None
    tells_nothing = _tells_nothing(walked.leaders, msg)
    assert (seen.leaders is None) == tells_nothing
    if seen.leaders is not None:
        assert seen.leaders == walked.leaders
    # ... and a client awaiting a success always has it walked
    _, awaiting = streamed(version, frame, cuts, {"app"}, stream_after)
    assert awaiting.responses[0].leaders == walked.leaders
