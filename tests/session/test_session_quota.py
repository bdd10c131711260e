"""A session charges its client's quota and makes the response to the request that went
over it carry the throttle (KIP-219), on the lane's reads and the general path's alike:
Produce responses, flexible ones with KIP-951's tail included, Fetch responses, read
whole or streamed. Frames by kio; the throttle read back by kio."""

from __future__ import annotations

import datetime
from dataclasses import replace

import pytest
from kio.schema.fetch.v17.response import FetchResponse
from kio.schema.produce.v10.response import ProduceResponse

from kproxy.session import ProxySession, SessionLimits
from kproxy.session.admission import CLIENT_REFUSED_APIS
from kproxy.session.quota import QuotaBook, QuotaRule
from tests.kio_support import decode_response_frame, encode_response_frame
from tests.session.fetch_frames import fetch_request, fetch_response
from tests.session.frames import (
    address_map,
    joined,
    produce_redirect,
    produce_request,
    produce_response,
)
from tests.session.lane_driver import heartbeat_request, heartbeat_response

RECORDS = b"r" * 10_000


def quota_session(
    produce: float | None = None,
    fetch: float | None = None,
    requests: float | None = None,
    stream_after: int = 1 << 20,
) -> ProxySession:
    book = QuotaBook([QuotaRule("all", None, None, (produce, fetch, requests))], 1.0, 3)
    s = ProxySession(
        address_map(open_nodes=(1, 2)),
        SessionLimits(1 << 20, 100, stream_after),
        CLIENT_REFUSED_APIS,
        awaiting_success=frozenset(),
        quotas=book,
    )
    s.client_host = "10.0.0.7"
    s.from_client(heartbeat_request(100), 0.0)  # each side's first frame, checked whole
    s.from_upstream(heartbeat_response(100), 0.0)
    return s


def throttle_of(cls: type, frame: bytes) -> int:
    return int(
        decode_response_frame(cls, frame)[1].throttle_time / datetime.timedelta(milliseconds=1)
    )


@pytest.mark.parametrize("redirect", [False, True])
def test_the_produce_response_that_went_over_carries_the_throttle(redirect: bool) -> None:
    s = quota_session(produce=6_000)
    first = s.from_client(produce_request(1, acks=1, records=RECORDS), 1.0)
    assert first.throttle_ms == 0  # 10 KB over the 2 s span: 5 KB/s
    step = s.from_client(produce_request(2, acks=1, records=RECORDS), 1.1)
    assert step.throttle_ms > 0
    answer = produce_redirect(2, 2, "broker-2.invalid", 9092) if redirect else produce_response(2)
    s.from_upstream(produce_response(1), 1.2)
    out = s.from_upstream(answer, 1.2)
    assert throttle_of(ProduceResponse, joined(out.to_client)) == step.throttle_ms
    if redirect:  # the tail (KIP-951's NodeEndpoints) rewritten behind it
        assert b"broker-2.invalid" not in joined(out.to_client)


def test_a_broker_s_longer_throttle_stands() -> None:
    s = quota_session(produce=6_000)
    s.from_client(produce_request(1, acks=1, records=RECORDS), 1.0)
    step = s.from_client(produce_request(2, acks=1, records=RECORDS), 1.0)
    assert 0 < step.throttle_ms < 60_000
    s.from_upstream(produce_response(1), 1.0)
    msg = decode_response_frame(ProduceResponse, produce_response(2))[1]
    slower = encode_response_frame(replace(msg, throttle_time=datetime.timedelta(minutes=1)), 2)
    out = s.from_upstream(slower, 1.0)
    assert throttle_of(ProduceResponse, joined(out.to_client)) == 60_000


@pytest.mark.parametrize("stream_after", [1 << 20, 1024])
def test_the_fetch_response_that_went_over_carries_the_throttle(stream_after: int) -> None:
    """Read whole, or forwarded as it arrives (the throttle is in its head)."""
    s = quota_session(fetch=6_000, stream_after=stream_after)
    s.from_client(fetch_request(17, 1), 1.0)
    first = encode_response_frame(fetch_response(17, [RECORDS]), 1)
    out = s.from_upstream(first, 1.0)  # 10 KB over the 2 s span: 5 KB/s
    assert joined(out.to_client) == first and out.throttle_ms == 0
    assert s.from_client(fetch_request(17, 2), 1.1).throttle_ms == 0
    out = s.from_upstream(encode_response_frame(fetch_response(17, [RECORDS]), 2), 1.2)
    assert out.throttle_ms > 0
    assert throttle_of(FetchResponse, joined(out.to_client)) == out.throttle_ms


def test_a_request_rate_quota_mutes_without_a_field_to_carry_it() -> None:
    s = quota_session(requests=1)
    steps = [s.from_client(heartbeat_request(corr), 1.0) for corr in range(1, 5)]
    assert steps[-1].throttle_ms > 0
    answer = s.from_upstream(heartbeat_response(4), 1.0)
    assert joined(answer.to_client) == heartbeat_response(4)  # Heartbeat: sent as it came


def test_a_client_no_entry_matches_is_never_charged() -> None:
    book = QuotaBook([QuotaRule("app", "app", None, (1.0, None, None))], 1.0, 3)
    s = ProxySession(address_map(), SessionLimits(1 << 20, 100), quotas=book)
    for corr in range(1, 4):  # its client id is "producer"
        assert s.from_client(produce_request(corr, acks=1, records=RECORDS), 1.0).throttle_ms == 0
    assert book.stats["app"].requests == 0


def test_a_client_no_entry_matched_is_charged_once_a_reload_adds_one() -> None:
    book = QuotaBook([QuotaRule("app", "app", None, (1.0, None, None))], 1.0, 3)
    s = ProxySession(address_map(), SessionLimits(1 << 20, 100), quotas=book)
    assert s.from_client(produce_request(1, acks=1, records=RECORDS), 1.0).throttle_ms == 0
    book.configure([QuotaRule("producer", "producer", None, (1.0, None, None))], 1.0, 3)
    step = s.from_client(produce_request(2, acks=1, records=RECORDS), 1.1)
    assert step.throttle_ms > 0 and book.stats["producer"].requests == 1
