"""`throttle_time_ms` found and set in every Produce and Fetch version kio encodes: the
flexible ones with KIP-951's tagged fields after it included; read back by kio."""

from __future__ import annotations

import datetime
import importlib
from dataclasses import replace

import pytest
from kio.schema.errors import ErrorCode

from kproxy.protocol.apis import FETCH, PRODUCE
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.throttle import throttle_offset, with_throttle
from tests.kio_support import decode_response_frame, encode_response_frame
from tests.session.fetch_frames import fetch_response

PRODUCE_VERSIONS = range(3, 13)  # kio's with a topic name (v13 names a topic id)


def produce_response(version: int, moved: bool) -> object:
    m = importlib.import_module(f"kio.schema.produce.v{version}.response")
    extra: dict[str, object] = {"record_errors": ()} if version >= 8 else {}
    if moved and version >= 10:
        extra["current_leader"] = m.LeaderIdAndEpoch(leader_id=2, leader_epoch=7)
    partition = m.PartitionProduceResponse(
        index=0, error_code=ErrorCode.none, base_offset=1, **extra
    )
    topic = m.TopicProduceResponse(name="t", partition_responses=(partition,))
    fields: dict[str, object] = {"responses": (topic,)}
    if moved and version >= 10:
        fields["node_endpoints"] = (m.NodeEndpoint(node_id=2, host="b2", port=9092, rack=None),)
    return m.ProduceResponse(**fields)


def retrottled(msg: object, api_key: int, version: int, ms: int) -> int:
    frame = encode_response_frame(msg, 9)
    view = memoryview(frame)[4:]
    body = parse_response_header(view, 1 if version >= (9 if api_key == PRODUCE else 12) else 0)[1]
    out = with_throttle(view, body, api_key, version, ms)
    again = len(out).to_bytes(4, "big") + bytes(out)
    got = decode_response_frame(type(msg), again)[1]
    assert replace(got, throttle_time=msg.throttle_time) == msg  # nothing else changed
    return int(got.throttle_time / datetime.timedelta(milliseconds=1))


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
@pytest.mark.parametrize("moved", [False, True])
def test_every_produce_version_carries_the_throttle(version: int, moved: bool) -> None:
    assert retrottled(produce_response(version, moved), PRODUCE, version, 1234) == 1234


@pytest.mark.parametrize("version", [4, 11, 12, 16, 17])
def test_fetch_carries_it_first(version: int) -> None:
    assert retrottled(fetch_response(version, [b"x" * 100]), FETCH, version, 77) == 77


def test_a_longer_throttle_already_there_stands_and_others_have_none() -> None:
    msg = produce_response(9, False)
    slow = replace(msg, throttle_time=datetime.timedelta(seconds=5))  # type: ignore[type-var]
    assert retrottled(slow, PRODUCE, 9, 10) == 5000
    assert throttle_offset(memoryview(b"\0" * 20), 4, PRODUCE, 0) is None
    assert throttle_offset(memoryview(b"\0" * 20), 4, 12, 4) is None  # Heartbeat
