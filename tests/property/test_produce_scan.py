"""The Produce response skip test (`kproxy.protocol.produce_scan`) against kio.

For every Produce response version kio has (3-13), random kio messages are encoded by
kio, and:

* whenever the scan says "plain", kio's object has no error, no record error, no error
  message, no `CurrentLeader` and no `NodeEndpoints`, and kproxy's walker finds no
  endpoint and no leader in it: the scan never skips a response that carries an error
  or a leader hint;
* the same message made plain (every partition appended) is "plain": the skip happens;
* that plain message with exactly one thing added (an error code, a record error, an
  error message, a CurrentLeader, a NodeEndpoint) is not, nor is it cut short or lengthened;
* bytes changed anywhere in a plain response never make the scan skip what the walker
  would act on or refuse, but for a topic name that is not UTF-8, which only the walk
  reads: at random, up to four bytes at a time, and every byte of one plain response
  in turn, set to each value a length, a count, an error code or a tag turns on.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.produce_scan import produce_response_is_plain
from kproxy.protocol.walker import walk
from tests.kio_strategies import message_strategy
from tests.kio_support import encode_response_frame, kio_message_class
from tests.property.scan_support import (
    AFTER,
    assert_plain_only_whole,
    changed_bytes,
    one_byte_changes,
    scanned,
    with_first_partition,
)
from tests.property.scan_support import spoilers as scan_spoilers
from tests.walk_oracle import walk_finds_nothing

PRODUCE = 0
VERSIONS = [v for v in range(3, 14) if kio_message_class(PRODUCE, v, "response") is not None]


def scan(msg: Any, version: int) -> tuple[bool, bytes, int]:
    return scanned(produce_response_is_plain, msg, version, version >= 9)


def has(obj: Any, name: str) -> bool:
    return any(f.name == name for f in dataclasses.fields(obj))


def plain(msg: Any) -> Any:
    """``msg`` with every partition appended and no KIP-951 hint."""
    module = sys.modules[type(msg).__module__]

    def partition(p: Any) -> Any:
        changes: dict[str, Any] = {"error_code": ErrorCode.none}
        if has(p, "record_errors"):
            changes.update(record_errors=(), error_message=None)
        if has(p, "current_leader"):
            changes["current_leader"] = module.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
        return dataclasses.replace(p, **changes)

    topics = tuple(
        dataclasses.replace(t, partition_responses=tuple(map(partition, t.partition_responses)))
        for t in msg.responses
    )
    changes: dict[str, Any] = {"responses": topics}
    if has(msg, "node_endpoints"):
        changes["node_endpoints"] = ()
    return dataclasses.replace(msg, **changes)


def spoilers(msg: Any) -> list[tuple[str, Any]]:
    """One thing added to a plain message with at least one partition, each way: those
    of every scanned response, and a record error and an error message."""
    module = sys.modules[type(msg).__module__]
    out = scan_spoilers(msg, "partition_responses")
    if has(msg.responses[0].partition_responses[0], "record_errors"):
        record_error = module.BatchIndexAndErrorMessage(
            batch_index=0, batch_index_error_message=None
        )
        out.append(("record error", first(msg, record_errors=(record_error,))))
        out.append(("error message", first(msg, error_message="")))
    return out


def first(msg: Any, **changes: Any) -> Any:
    return with_first_partition(msg, "partition_responses", **changes)


@pytest.mark.parametrize("version", VERSIONS)
@given(data=st.data())
def test_the_scan_is_exact_against_kio(version: int, data: st.DataObject) -> None:
    cls = kio_message_class(PRODUCE, version, "response")
    msg = data.draw(message_strategy(cls))
    said, frame, body = scan(msg, version)
    # Inside a longer read (a next frame's bytes after it), the same answer.
    assert produce_response_is_plain(frame + AFTER, body, len(frame), version) == said
    if said:
        walked = walk(frame, body, PRODUCE, version, False)
        assert not walked.endpoints
        assert all(o.error_code == 0 and o.leader_id is None for o in walked.leaders)
        assert not getattr(msg, "node_endpoints", ())
    appended = plain(msg)
    _, frame, body = scan(appended, version)
    assert_plain_only_whole(produce_response_is_plain, frame, body, version)
    if any(t.partition_responses for t in appended.responses):
        first = next(i for i, t in enumerate(appended.responses) if t.partition_responses)
        ordered = (appended.responses[first], *appended.responses[:first])
        ordered += appended.responses[first + 1 :]
        appended = dataclasses.replace(appended, responses=ordered)
        for what, spoiled in spoilers(appended):
            assert not scan(spoiled, version)[0], what


@pytest.mark.parametrize("version", VERSIONS)
@given(
    data=st.data(),
    changes=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    cut=st.integers(-3, 3),
)
def test_changed_bytes_never_skip_what_the_walk_would_act_on(
    version: int, data: st.DataObject, changes: list[tuple[int, int]], cut: int
) -> None:
    """A broker's bytes changed anywhere after the header: whatever the scan calls plain,
    the walker reads without finding an error, a leader hint or an endpoint, or refuses
    only for a topic name that is not UTF-8, which only the walk reads."""
    cls = kio_message_class(PRODUCE, version, "response")
    msg = plain(data.draw(message_strategy(cls)))
    _, frame, body = scan(msg, version)
    spoiled = changed_bytes(frame, body, changes, cut)
    if produce_response_is_plain(spoiled, body, len(spoiled), version):
        assert walk_finds_nothing(spoiled, body, PRODUCE, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_no_one_byte_change_makes_the_scan_skip_what_the_walk_would_act_on(version: int) -> None:
    """Every byte of a plain response of two partitions changed, one at a time, to each
    value a length, a count, an error code or a tag turns on: what the scan still calls
    plain, the walker finds nothing in (random changes above reach few such bytes)."""
    _, frame, body = scan(plain_response(version, partitions=2, name="t"), version)
    for at, changed in one_byte_changes(frame, body):
        if produce_response_is_plain(changed, body, len(changed), version):
            assert walk_finds_nothing(changed, body, PRODUCE, version), (at, changed[at])


def plain_response(version: int, partitions: int, name: str) -> Any:
    """A plain Produce response of one topic (``name``, or a topic id from version 13)
    with ``partitions`` partitions."""
    cls = kio_message_class(PRODUCE, version, "response")
    assert cls is not None
    module = sys.modules[cls.__module__]
    names = {f.name for f in dataclasses.fields(module.PartitionProduceResponse)}
    given_fields: dict[str, Any] = {
        "error_code": ErrorCode.none,
        "base_offset": 7,
        "log_append_time": None,
        "log_start_offset": 0,
        "record_errors": (),
        "error_message": None,
    }
    if "current_leader" in names:
        given_fields["current_leader"] = module.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
    kwargs = {k: v for k, v in given_fields.items() if k in names}
    parts = tuple(module.PartitionProduceResponse(index=i, **kwargs) for i in range(partitions))
    topic_names = {f.name for f in dataclasses.fields(module.TopicProduceResponse)}
    named: dict[str, Any] = {"name": name} if "name" in topic_names else {"topic_id": uuid.uuid4()}
    topic = module.TopicProduceResponse(**named, partition_responses=parts)
    return cls(responses=(topic,), throttle_time=datetime.timedelta(0))


def test_versions_the_scan_does_not_know_are_never_plain() -> None:
    cls = kio_message_class(PRODUCE, 9, "response")
    assert cls is not None
    msg = cls(responses=(), throttle_time=datetime.timedelta(0))
    frame = encode_response_frame(msg, 1)[4:]
    _, body = parse_response_header(memoryview(frame), 1)
    assert produce_response_is_plain(frame, body, len(frame), 9)
    assert not produce_response_is_plain(frame, body, len(frame), 14)
    assert not produce_response_is_plain(frame, body, len(frame), 2)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v < 9])
@pytest.mark.parametrize("name_length", [-1, -2, -0x8000])
def test_a_null_or_negative_topic_name_before_flexible_is_never_plain(
    version: int, name_length: int
) -> None:
    """A topic name no encoder writes (null, or a negative length other than null): the
    scan leaves it to the walker, which says what is wrong, and never reads on."""
    cls = kio_message_class(PRODUCE, version, "response")
    assert cls is not None
    msg = cls(responses=(), throttle_time=datetime.timedelta(0))
    frame = encode_response_frame(msg, 1)[4:]
    _, body = parse_response_header(memoryview(frame), 1)
    # One topic, its name's int16 length, and what would follow an empty name: no
    # partitions (int32 0) and ThrottleTimeMs. Read as empty, the name would pass.
    spoiled = frame[:body] + (1).to_bytes(4, "big") + name_length.to_bytes(2, "big", signed=True)
    spoiled += bytes(4 + 4)
    assert not produce_response_is_plain(spoiled, body, len(spoiled), version)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 9])
@pytest.mark.parametrize("count", [1, 126, 127, 300])
def test_names_and_counts_past_a_one_byte_varint(version: int, count: int) -> None:
    # Compact lengths and counts of 127 or more take two varint bytes.
    msg = plain_response(version, partitions=count, name="t" * count)
    assert scan(msg, version)[0]
    for what, spoiled in spoilers(msg):
        assert not scan(spoiled, version)[0], what
