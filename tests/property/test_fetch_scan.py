"""The gathered Fetch response's skip test (`kproxy.protocol.fetch_scan`) against kio.

For every Fetch response version kio has (4-18), random kio messages are encoded by
kio, and:

* the scan says "plain" exactly when kproxy's walker, reading the same bytes, finds
  nothing it would act on: no endpoint, and every partition with ErrorCode 0 and no
  leader hint. It never skips a response that carries an error, a KIP-951
  `CurrentLeader` or `NodeEndpoints`, and it skips every other one, whatever it holds
  besides (aborted transactions, a `DivergingEpoch`, records or none);
* the same message made plain is "plain", and with exactly one thing added (an error, a
  `CurrentLeader`, a `NodeEndpoint`) it is not, nor is it cut short or lengthened;
* bytes changed anywhere in a plain response never make the scan skip what the walker
  would act on or refuse, but for a topic name that is not UTF-8, which only the walk
  reads (as for a streamed response's skim): at random, up to four bytes at a time,
  and every byte of one plain response in turn, set to each value a length, a count,
  an error code or a tag turns on;
* counts and lengths no body could hold are answered at once, not looped over.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kproxy.protocol.fetch_scan import fetch_response_is_plain
from tests.kio_strategies import message_strategy
from tests.kio_support import kio_message_class
from tests.property.scan_support import (
    AFTER,
    assert_plain_only_whole,
    changed_bytes,
    one_byte_changes,
    scanned,
    spoilers,
)
from tests.session.fetch_frames import fetch_response
from tests.walk_oracle import walk_finds_nothing

FETCH = 1
VERSIONS = [v for v in range(4, 19) if kio_message_class(FETCH, v, "response") is not None]


def scan(msg: Any, version: int) -> tuple[bool, bytes, int]:
    return scanned(fetch_response_is_plain, msg, version, version >= 12)


def tells_nothing(frame: bytes, body: int, version: int) -> bool:
    """What the walker finds would change nothing for a client awaiting no success."""
    return walk_finds_nothing(frame, body, FETCH, version)


def plain(msg: Any) -> Any:
    """``msg`` with every partition's ErrorCode 0, no CurrentLeader, no NodeEndpoints."""

    def partition(p: Any) -> Any:
        changes: dict[str, Any] = {"error_code": ErrorCode.none}
        if hasattr(p, "current_leader"):  # its default is not sent (KIP-482)
            default = {f.name: f.default for f in dataclasses.fields(p)}["current_leader"]
            changes["current_leader"] = default
        return dataclasses.replace(p, **changes)

    topics = tuple(
        dataclasses.replace(t, partitions=tuple(map(partition, t.partitions)))
        for t in msg.responses
    )
    msg = dataclasses.replace(msg, responses=topics)
    if hasattr(msg, "node_endpoints"):
        msg = dataclasses.replace(msg, node_endpoints=())
    return msg


@pytest.mark.parametrize("version", VERSIONS)
@given(data=st.data())
def test_the_scan_is_exact_against_kio(version: int, data: st.DataObject) -> None:
    cls = kio_message_class(FETCH, version, "response")
    msg = data.draw(message_strategy(cls))
    said, frame, body = scan(msg, version)
    assert said == tells_nothing(frame, body, version), msg
    # Inside a longer read (a next frame's bytes after it), the same answer.
    assert fetch_response_is_plain(frame + AFTER, body, len(frame), version) == said
    calm = plain(msg)
    _, frame, body = scan(calm, version)
    assert_plain_only_whole(fetch_response_is_plain, frame, body, version)
    if calm.responses and calm.responses[0].partitions:
        for what, spoiled in spoilers(calm, "partitions"):
            assert not scan(spoiled, version)[0], what


@pytest.mark.parametrize("version", VERSIONS)
@given(
    changes=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    cut=st.integers(-3, 3),
)
def test_changed_bytes_never_skip_what_the_walk_would_act_on(
    version: int, changes: list[tuple[int, int]], cut: int
) -> None:
    msg = fetch_response(version, [b"r" * 30, b"s" * 20])
    _, frame, body = scan(msg, version)
    data = changed_bytes(frame, body, changes, cut)
    if fetch_response_is_plain(data, body, len(data), version):
        assert tells_nothing(data, body, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_no_one_byte_change_makes_the_scan_skip_what_the_walk_would_act_on(version: int) -> None:
    """Every byte of a plain response of two partitions changed, one at a time, to each
    value a length, a count, an error code or a tag turns on: what the scan still calls
    plain, the walker finds nothing in (random changes above reach few such bytes)."""
    _, frame, body = scan(fetch_response(version, [b"r" * 3, b"s" * 2]), version)
    for at, changed in one_byte_changes(frame, body):
        if fetch_response_is_plain(changed, body, len(changed), version):
            assert tells_nothing(changed, body, version), (at, changed[at])


@pytest.mark.parametrize("version", VERSIONS)
def test_what_the_walker_passes_over_does_not_stop_the_skip(version: int) -> None:
    msg = fetch_response(version, [b"r" * 40, b"", b"s" * 300])
    module = sys.modules[type(msg).__module__]
    topic = msg.responses[0]
    first, second, third = topic.partitions
    aborted = (module.AbortedTransaction(producer_id=7, first_offset=3),) * 3
    changed = [dataclasses.replace(first, aborted_transactions=aborted)]
    changed.append(dataclasses.replace(second, records=None, aborted_transactions=None))
    if hasattr(third, "diverging_epoch"):
        diverged = module.EpochEndOffset(epoch=4, end_offset=100)
        snapshot = module.SnapshotId(end_offset=9, epoch=2)
        third = dataclasses.replace(third, diverging_epoch=diverged, snapshot_id=snapshot)
    changed.append(third)
    msg = dataclasses.replace(
        msg, responses=(dataclasses.replace(topic, partitions=tuple(changed)),)
    )
    said, frame, body = scan(msg, version)
    assert said and tells_nothing(frame, body, version)


def test_versions_the_scan_does_not_know_are_never_plain() -> None:
    said, frame, body = scan(fetch_response(4, [b"r"]), 4)
    assert said
    for version in (3, 19):
        assert not fetch_response_is_plain(frame, body, len(frame), version)


@pytest.mark.parametrize("version", [11, 17])
@pytest.mark.parametrize("count", [1, 126, 127, 300])
def test_counts_past_a_one_byte_varint(version: int, count: int) -> None:
    # Compact counts and lengths of 127 or more take two varint bytes.
    msg = fetch_response(version, [b"r" * count] * count)
    assert scan(msg, version)[0]
    for what, spoiled in spoilers(msg, "partitions"):
        assert not scan(spoiled, version)[0], what


@pytest.mark.parametrize(
    ("version", "spoil"),
    [
        # Partitions: 2**31 - 1 of them (int32) in a body of a few dozen bytes.
        (11, lambda body, at: body[:at] + b"\x7f\xff\xff\xff" + body[at + 4 :]),
        # The same as a compact count (a 5-byte varint).
        (17, lambda body, at: body[:at] + b"\xff\xff\xff\xff\x07" + body[at + 1 :]),
        # Aborted transactions (fixed-size elements, nothing read per element): their
        # int32 count after the partition count and the partition's 30 fixed bytes.
        (11, lambda body, at: body[: at + 34] + b"\x7f\xff\xff\xff" + body[at + 38 :]),
    ],
)
def test_a_count_no_body_could_hold_is_answered_at_once(version: int, spoil: Any) -> None:
    said, frame, body = scan(fetch_response(version, [b"r" * 10]), version)
    assert said
    # The partition count follows the topic's name (v4-12) or id (v13+).
    if version >= 13:
        at = body + 10 + 1 + 16
    else:
        at = body + 10 + 4 + 2 + len(b"orders")
        assert frame[at - 6 : at] == b"orders"
    spoiled = spoil(frame, at)
    assert not fetch_response_is_plain(spoiled, body, len(spoiled), version)


def test_a_negative_length_is_not_plain() -> None:
    # Records length -2 (int32): neither null nor a length; the walker refuses it.
    said, frame, body = scan(fetch_response(11, [b""]), 11)
    assert said
    assert frame.endswith(b"\x00\x00\x00\x00")  # the empty records' length, last
    spoiled = frame[:-4] + b"\xff\xff\xff\xfe"
    assert not fetch_response_is_plain(spoiled, body, len(spoiled), 11)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("array", ["responses", "partitions"])
def test_a_null_array_is_not_plain(version: int, array: str) -> None:
    # Null (compact count 0, int32 count -1) where the schema allows none: not the shape
    # the scan skips, even with nothing after it; the walk, which reads it as empty,
    # decides.
    msg = fetch_response(version, [b"r" * 10])
    if array == "responses":
        msg = dataclasses.replace(msg, responses=())
    else:  # a topic with no partition: the body adds up as well with the null as without
        msg = dataclasses.replace(
            msg, responses=(dataclasses.replace(msg.responses[0], partitions=()),)
        )
    said, frame, body = scan(msg, version)
    assert said
    at = body + (10 if version >= 7 else 4)  # ThrottleTimeMs, ErrorCode, SessionId
    flexible = version >= 12
    if array == "partitions":  # after the topic count and its id (v13+) or name
        at += (1 if flexible else 4) + (16 if version >= 13 else 0)
        if version < 13:
            at += (1 if flexible else 2) + len(b"orders")
            assert frame[at - 6 : at] == b"orders"
    null = b"\x00" if flexible else b"\xff\xff\xff\xff"
    spoiled = frame[:at] + null + frame[at + len(null) :]
    assert not fetch_response_is_plain(spoiled, body, len(spoiled), version)
