"""kproxy's own requests by layout (`kproxy.protocol.own_messages`), checked against an
independent codec (kio): what kproxy writes, kio reads as meant; what kio writes as a
broker would, kproxy reads."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v4.response import Coordinator, FindCoordinatorResponse
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.init_producer_id.v4.response import InitProducerIdResponse
from kio.schema.types import BrokerId, ProducerId
from kio.static.primitive import i16, i32

from kproxy.protocol.errors import ProtocolError
from kproxy.protocol.own_messages import own_request, own_response
from tests.kio_support import decode_request_frame, encode_response_frame

NO_THROTTLE = datetime.timedelta(0)


def test_requests_are_read_by_kio_as_written() -> None:
    frame = own_request(10, 4, 7, {"KeyType": 1, "CoordinatorKeys": ["tx-a", "tx-b"]})
    assert decode_request_frame(frame) == (
        10, 4, 7, "kproxy", FindCoordinatorRequest(key_type=1, coordinator_keys=("tx-a", "tx-b"))
    )  # fmt: skip
    frame = own_request(22, 4, 8, {"TransactionalId": "tx-a", "TransactionTimeoutMs": 60_000})
    assert decode_request_frame(frame) == (
        22, 4, 8, "kproxy",
        InitProducerIdRequest(transactional_id="tx-a",
                              transaction_timeout=datetime.timedelta(seconds=60)),
    )  # fmt: skip


def test_responses_written_by_kio_are_read() -> None:
    found = FindCoordinatorResponse(
        throttle_time=NO_THROTTLE,
        coordinators=(
            Coordinator(key="tx-a", node_id=BrokerId(1), host="b1.kafka", port=i32(9092),
                        error_code=ErrorCode.none, error_message=None),
            Coordinator(key="tx-b", node_id=BrokerId(-1), host="", port=i32(-1),
                        error_code=ErrorCode.coordinator_not_available, error_message="later"),
        ),
    )  # fmt: skip
    value = own_response(memoryview(encode_response_frame(found, 7)[4:]), 10, 4)
    assert [(c["Key"], c["Host"], c["Port"], c["ErrorCode"]) for c in value["Coordinators"]] == [
        ("tx-a", "b1.kafka", 9092, 0),
        ("tx-b", "", -1, 15),
    ]
    given = InitProducerIdResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.concurrent_transactions,
        producer_id=ProducerId(-1),
        producer_epoch=i16(-1),
    )
    value = own_response(memoryview(encode_response_frame(given, 8)[4:]), 22, 4)
    assert value["ErrorCode"] == 51


def test_a_truncated_response_is_an_error() -> None:
    given = InitProducerIdResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none, producer_id=ProducerId(5),
        producer_epoch=i16(0),
    )  # fmt: skip
    frame = encode_response_frame(given, 8)[4:-6]
    with pytest.raises(ProtocolError):
        own_response(memoryview(frame), 22, 4)
