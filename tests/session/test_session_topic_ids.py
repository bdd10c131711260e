"""The topic ids of the cluster a switchover left (`kproxy.session.topic_ids`): while
they are moved, a Produce v13+ naming one goes on naming the target's id for the same
topic, and its answer comes back naming the id the client sent; other ids, older
Produce versions and everything once the move is over pass as they came. Frames by kio.
"""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.produce.v13 import request as produce
from kio.schema.produce.v13 import response as produced
from kio.static.primitive import Records, i16, i32, i64

from kproxy.session import ProxySession, audit
from tests.kio_support import (
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
)
from tests.session.frames import client, joined, produce_request, session, upstream

OLD, NEW, OTHER = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
RECORDS = Records(b"\x00" * 61 + b"records as the client wrote them")


def produce_v13(corr: int, *topic_ids: uuid.UUID) -> bytes:
    msg = produce.ProduceRequest(
        acks=i16(-1),
        timeout=datetime.timedelta(seconds=30),
        topic_data=tuple(
            produce.TopicProduceData(
                topic_id=topic_id,
                partition_data=(produce.PartitionProduceData(index=i32(0), records=RECORDS),),
            )
            for topic_id in topic_ids
        ),
    )
    return encode_request_frame(msg, corr, "java-producer")


def produced_v13(corr: int, *topic_ids: uuid.UUID) -> bytes:
    msg = produced.ProduceResponse(
        responses=tuple(
            produced.TopicProduceResponse(
                topic_id=topic_id,
                partition_responses=(
                    produced.PartitionProduceResponse(
                        index=i32(0),
                        error_code=ErrorCode.none,
                        base_offset=i64(41),
                        record_errors=(),
                    ),
                ),
            )
            for topic_id in topic_ids
        )
    )
    return encode_response_frame(msg, corr)


def named_ids(frame: bytes) -> list[uuid.UUID]:
    *_, msg = decode_request_frame(frame)
    assert msg.topic_data[0].partition_data[0].records == RECORDS
    return [topic.topic_id for topic in msg.topic_data]


def answered_ids(frame: bytes) -> list[uuid.UUID]:
    _, msg = decode_response_frame(produced.ProduceResponse, frame)
    return [topic.topic_id for topic in msg.responses]


def moved_session() -> ProxySession:
    s = session()
    s.policy.move_topic_ids({OLD.bytes: NEW.bytes})
    return s


def test_a_produce_naming_a_moved_id_names_the_targets_and_its_answer_the_clients() -> None:
    s = moved_session()
    step = client(s, produce_v13(1, OLD, OTHER))
    assert named_ids(joined(step.to_upstream)) == [NEW, OTHER]
    answer = upstream(s, produced_v13(1, NEW, OTHER))
    assert answered_ids(joined(answer.to_client)) == [OLD, OTHER]


def test_what_names_no_moved_id_passes_as_it_came() -> None:
    s = moved_session()
    request = produce_v13(1, OTHER)
    assert joined(client(s, request).to_upstream) == request
    answer = produced_v13(1, OTHER)
    assert joined(upstream(s, answer).to_client) == answer
    older = produce_request(2, -1)  # v10: topics by name
    assert joined(client(s, older).to_upstream) == older


def test_a_move_reaches_open_connections_and_its_end_restores_the_lane() -> None:
    s = session()
    request = produce_v13(1, OLD)
    assert joined(client(s, request).to_upstream) == request
    upstream(s, produced_v13(1, OLD))
    s.policy.move_topic_ids({OLD.bytes: NEW.bytes})
    assert named_ids(joined(client(s, produce_v13(2, OLD)).to_upstream)) == [NEW]
    upstream(s, produced_v13(2, NEW))
    s.policy.move_topic_ids({})
    request = produce_v13(3, OLD)
    assert joined(client(s, request).to_upstream) == request


def test_a_malformed_or_oversized_produce_closes_its_connection_unforwarded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Read for its ids, a Produce is bound as any request kproxy reads (`audit`)."""
    frame = bytearray(produce_v13(1, OLD))
    frame[frame.index(OLD.bytes) - 1] = 101  # the topic array says 100 topics follow
    step = client(moved_session(), bytes(frame))
    assert step.to_upstream == []
    assert step.close is not None and step.close.reason == "malformed"
    monkeypatch.setattr(audit, "ELEMENT_LIMIT", 2)
    step = client(moved_session(), produce_v13(1, OLD, OTHER, NEW))
    assert step.to_upstream == []
    assert step.close is not None and step.close.reason == "topic_ids_too_large"
    # Past the bytes kproxy reads, a Produce goes on as it came.
    monkeypatch.setattr(audit, "READ_LIMIT", 64)
    request = produce_v13(1, OLD)
    assert joined(client(moved_session(), request).to_upstream) == request
