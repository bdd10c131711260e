"""The Produce response skip test (`kproxy.protocol.produce_scan`) against kio.

For every Produce response version kio has (3-13), random kio messages are encoded by
kio, and:

* whenever the scan says "plain", kio's object has no error, no record error, no error
  message, no `CurrentLeader` and no `NodeEndpoints`, and kproxy's walker finds no
  endpoint and no leader in it: the scan never skips a response that carries an error
  or a leader hint;
* the same message made plain (every partition appended) is "plain": the skip happens;
* that plain message with exactly one thing added (an error code, a record error, an
  error message, a CurrentLeader, a NodeEndpoint) is not, nor is it cut short or lengthened.
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
from tests.kio_support import encode_response_frame, kio_message_class, message_strategy

PRODUCE = 0
AFTER = b"\x00\x00\x00\x01" * 8  # bytes a next frame in the same read could start with
VERSIONS = [v for v in range(3, 14) if kio_message_class(PRODUCE, v, "response") is not None]


def scan(msg: Any, version: int) -> tuple[bool, bytes, int]:
    frame = encode_response_frame(msg, 1)[4:]
    _, body = parse_response_header(memoryview(frame), 1 if version >= 9 else 0)
    return produce_response_is_plain(frame, body, len(frame), version), frame, body


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
    """One thing added to a plain message with at least one partition, each way."""
    module = sys.modules[type(msg).__module__]
    topic = msg.responses[0]
    first = topic.partition_responses[0]

    def with_first(**changes: Any) -> Any:
        parts = (dataclasses.replace(first, **changes), *topic.partition_responses[1:])
        topics = (dataclasses.replace(topic, partition_responses=parts), *msg.responses[1:])
        return dataclasses.replace(msg, responses=topics)

    out = [("error", with_first(error_code=ErrorCode.not_leader_or_follower))]
    if has(first, "record_errors"):
        out.append(
            (
                "record error",
                with_first(
                    record_errors=(
                        module.BatchIndexAndErrorMessage(
                            batch_index=0, batch_index_error_message=None
                        ),
                    )
                ),
            )
        )
        out.append(("error message", with_first(error_message="")))
    if has(first, "current_leader"):
        leader = module.LeaderIdAndEpoch(leader_id=2, leader_epoch=5)
        out.append(("current leader", with_first(current_leader=leader)))
        endpoint = module.NodeEndpoint(node_id=2, host="b", port=9092, rack=None)
        out.append(("node endpoints", dataclasses.replace(msg, node_endpoints=(endpoint,))))
    return out


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
    said, frame, body = scan(appended, version)
    assert said, appended
    # Cut short or lengthened by a byte: not plain (the walker then judges it), cut
    # short with a next frame's bytes after it too.
    assert not produce_response_is_plain(frame[:-1], body, len(frame) - 1, version)
    assert not produce_response_is_plain(frame[:-1] + AFTER, body, len(frame) - 1, version)
    longer = frame + b"\x00"
    assert not produce_response_is_plain(longer, body, len(longer), version)
    if any(t.partition_responses for t in appended.responses):
        first = next(i for i, t in enumerate(appended.responses) if t.partition_responses)
        ordered = (appended.responses[first], *appended.responses[:first])
        ordered += appended.responses[first + 1 :]
        appended = dataclasses.replace(appended, responses=ordered)
        for what, spoiled in spoilers(appended):
            assert not scan(spoiled, version)[0], what


def test_versions_the_scan_does_not_know_are_never_plain() -> None:
    cls = kio_message_class(PRODUCE, 9, "response")
    assert cls is not None
    msg = cls(responses=(), throttle_time=datetime.timedelta(0))
    frame = encode_response_frame(msg, 1)[4:]
    _, body = parse_response_header(memoryview(frame), 1)
    assert produce_response_is_plain(frame, body, len(frame), 9)
    assert not produce_response_is_plain(frame, body, len(frame), 14)
    assert not produce_response_is_plain(frame, body, len(frame), 2)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 9])
@pytest.mark.parametrize("count", [1, 126, 127, 300])
def test_names_and_counts_past_a_one_byte_varint(version: int, count: int) -> None:
    # Compact lengths and counts of 127 or more take two varint bytes.
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
    parts = tuple(module.PartitionProduceResponse(index=i, **kwargs) for i in range(count))
    topic_names = {f.name for f in dataclasses.fields(module.TopicProduceResponse)}
    named: dict[str, Any] = (
        {"name": "t" * count} if "name" in topic_names else {"topic_id": uuid.uuid4()}
    )
    topic = module.TopicProduceResponse(**named, partition_responses=parts)
    msg = cls(responses=(topic,), throttle_time=datetime.timedelta(0))
    assert scan(msg, version)[0]
    for what, spoiled in spoilers(msg):
        assert not scan(spoiled, version)[0], what
