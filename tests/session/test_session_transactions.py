"""The transactional ids a connection's client uses (`kproxy.session.transactions`): noted
once the coordinator accepted them, so that a switchover aborts their open transactions
on the cluster it leaves; the requests and responses pass unchanged. Frames by kio."""

from __future__ import annotations

import datetime

from kio.schema.end_txn.v4.request import EndTxnRequest
from kio.schema.end_txn.v4.response import EndTxnResponse
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v5.request import InitProducerIdRequest
from kio.schema.init_producer_id.v5.response import InitProducerIdResponse
from kio.schema.types import ProducerId, TransactionalId
from kio.static.primitive import i16

from kproxy.session.transactions import MAX_IDS_PER_CONNECTION
from tests.kio_support import encode_request_frame, encode_response_frame
from tests.session.frames import client, joined, session, upstream

NO_THROTTLE = datetime.timedelta(0)


def init_producer_id(corr: int, transactional_id: str | None) -> bytes:
    msg = InitProducerIdRequest(
        transactional_id=None if transactional_id is None else TransactionalId(transactional_id),
        transaction_timeout=datetime.timedelta(seconds=60),
    )
    return encode_request_frame(msg, corr, "txp")


def init_answer(corr: int, error: ErrorCode = ErrorCode.none) -> bytes:
    msg = InitProducerIdResponse(
        throttle_time=NO_THROTTLE,
        error_code=error,
        producer_id=ProducerId(7),
        producer_epoch=i16(0),
    )
    return encode_response_frame(msg, corr)


def end_txn(corr: int, transactional_id: str) -> bytes:
    msg = EndTxnRequest(
        transactional_id=TransactionalId(transactional_id),
        producer_id=ProducerId(7),
        producer_epoch=i16(0),
        committed=True,
    )
    return encode_request_frame(msg, corr, "txp")


def end_answer(corr: int, error: ErrorCode = ErrorCode.none) -> bytes:
    return encode_response_frame(EndTxnResponse(throttle_time=NO_THROTTLE, error_code=error), corr)


def test_a_transactional_id_is_noted_once_the_coordinator_accepted_it() -> None:
    s = session()
    request = init_producer_id(1, "orders-tx")
    step = client(s, request)
    assert joined(step.to_upstream) == request  # passed on as it came
    assert s.transactional_ids is None  # not before the answer
    answer = init_answer(1)
    assert joined(upstream(s, answer).to_client) == answer
    assert s.transactional_ids == {"orders-tx"}
    client(s, end_txn(2, "orders-tx"))
    upstream(s, end_answer(2))
    assert s.transactional_ids == {"orders-tx"}


def test_a_refused_or_missing_id_is_not_noted() -> None:
    s = session()
    client(s, init_producer_id(1, "not-mine"))
    upstream(s, init_answer(1, ErrorCode.transactional_id_authorization_failed))
    client(s, init_producer_id(2, None))  # an idempotent producer: no id
    upstream(s, init_answer(2))
    client(s, end_txn(3, "fenced"))
    upstream(s, end_answer(3, ErrorCode.producer_fenced))
    assert s.transactional_ids is None


def test_an_id_named_by_end_txn_alone_is_noted_and_the_ids_are_bounded() -> None:
    """A connection opened mid-transaction (a coordinator that moved) sends no
    InitProducerId; its EndTxn names the id. A client naming many keeps its first few."""
    s = session()
    for i in range(MAX_IDS_PER_CONNECTION + 3):
        client(s, end_txn(i + 1, f"tx-{i}"))
        upstream(s, end_answer(i + 1))
    assert s.transactional_ids == {f"tx-{i}" for i in range(MAX_IDS_PER_CONNECTION)}


def test_a_malformed_transaction_request_closes_the_connection() -> None:
    s = session()
    request = bytearray(init_producer_id(1, "orders-tx"))
    del request[-8:]  # the body ends inside the producer id
    request[0:4] = (len(request) - 4).to_bytes(4, "big")
    step = client(s, bytes(request))
    assert step.close is not None and step.close.side == "client"
    assert step.to_upstream == []
