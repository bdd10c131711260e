"""`bench.least_pair`, the yardstick `bench.session_bench` reports beside kproxy's own
per-pair cost, does the pair's work: it reads the request's header and acks, finds the
response's request and scans the response (a yardstick that skipped these would flatter
the comparison)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from bench.least_pair import least_pair
from bench.session_pairs import produce_pair
from tests.session.frames import produce_response


def test_a_plain_pair_goes_through_many_times() -> None:
    run = least_pair(*produce_pair())
    for _ in range(3):
        assert run() is None


def test_a_response_with_an_error_or_a_leader_hint_is_one_kproxy_would_walk() -> None:
    request, _ = produce_pair()
    with pytest.raises(ValueError, match="walk"):
        least_pair(request, produce_response(7, error=ErrorCode.not_leader_or_follower))()
    with pytest.raises(ValueError, match="walk"):
        least_pair(request, produce_response(7, leader=(2, 5)))()


def test_a_response_must_answer_a_request_in_flight() -> None:
    request, _ = produce_pair()
    with pytest.raises(KeyError):
        least_pair(request, produce_response(8, topic="bench"))()


def test_a_frame_that_is_not_one_whole_frame_is_refused() -> None:
    request, response = produce_pair()
    with pytest.raises(ValueError, match="whole"):
        least_pair(request + b"\x00", response)()
