"""Produce and Fetch frames of the session playbooks, built and read by kio."""

from __future__ import annotations

import datetime
import uuid

from kio.schema.errors import ErrorCode
from kio.schema.produce.v9 import request as produce
from kio.schema.produce.v9 import response as produced

from tests.kio_support import (
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    fetch_from_start,
)

ZERO = datetime.timedelta(0)


def produce_to(corr: int, *topics: str) -> bytes:
    msg = produce.ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout=datetime.timedelta(seconds=1),
        topic_data=tuple(
            produce.TopicProduceData(
                name=t, partition_data=(produce.PartitionProduceData(index=0, records=None),)
            )
            for t in topics
        ),
    )
    return encode_request_frame(msg, corr, "app")


def produced_by(corr: int, *topics: str) -> bytes:
    partition = produced.PartitionProduceResponse(
        index=0,
        error_code=ErrorCode.none,
        base_offset=7,
        log_append_time=None,
        log_start_offset=0,
        record_errors=(),
    )
    msg = produced.ProduceResponse(
        responses=tuple(
            produced.TopicProduceResponse(name=t, partition_responses=(partition,)) for t in topics
        ),
        throttle_time=ZERO,
    )
    return encode_response_frame(msg, corr)


def produce_errors(frame: bytes) -> list[tuple[str, int]]:
    _, msg = decode_response_frame(produced.ProduceResponse, frame)
    return [(t.name, p.error_code.value) for t in msg.responses for p in t.partition_responses]


def fetch_by_id(corr: int, *topic_ids: uuid.UUID) -> bytes:
    from kio.schema.fetch.v13 import request as fetch

    partition = fetch_from_start(fetch)
    msg = fetch.FetchRequest(
        cluster_id=None,
        replica_id=-1,
        max_wait=ZERO,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=tuple(fetch.FetchTopic(topic_id=t, partitions=(partition,)) for t in topic_ids),
        forgotten_topics_data=(),
        rack_id="",
    )
    return encode_request_frame(msg, corr, "app")
