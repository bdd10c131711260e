"""A plain Produce response (appended, no error, no KIP-951 hint) is forwarded without a
walk unless its client waits for a success to end a redirect's recovery; a redirect is
always walked and rewritten (`kproxy.protocol.produce_scan`). Messages by kio."""

from __future__ import annotations

from kproxy.session import ProxySession, SessionLimits
from kproxy.session.admission import CLIENT_REFUSED_APIS
from tests.session.frames import (
    address_map,
    client,
    joined,
    produce_redirect,
    produce_request,
    produce_response,
    upstream,
)


def appended(corr: int) -> bytes:
    return produce_response(corr)


def producer_session(waiting: set[str]) -> ProxySession:
    """A session whose clients in `waiting` await a success (their responses walked)."""
    return ProxySession(
        address_map(open_nodes=(1, 2)),
        SessionLimits(1 << 20, 100),
        CLIENT_REFUSED_APIS,
        None,
        None,
        waiting,
    )


def test_a_plain_produce_response_is_not_walked() -> None:
    s = producer_session(waiting=set())
    client(s, produce_request(3, acks=1))
    step = upstream(s, appended(3))
    assert joined(step.to_client) == appended(3)
    (seen,) = step.responses
    assert seen.leaders is None  # not walked: nothing in it for the leader table


def test_a_client_awaiting_a_success_has_it_walked() -> None:
    s = producer_session(waiting={"producer"})
    client(s, produce_request(3, acks=1))
    (seen,) = upstream(s, appended(3)).responses
    assert seen.leaders is not None
    assert [(o.error_code, o.leader_id) for o in seen.leaders] == [(0, None)]


def test_a_redirect_is_always_walked_and_rewritten() -> None:
    s = producer_session(waiting=set())
    client(s, produce_request(4, acks=1))
    step = upstream(s, produce_redirect(4, 2, "broker-2.invalid", 9092))
    (seen,) = step.responses
    assert seen.leaders is not None and seen.rewritten == 1
    assert b"broker-2.invalid" not in joined(step.to_client)


def test_without_the_question_every_produce_response_is_walked() -> None:
    s = ProxySession(address_map(), SessionLimits(1 << 20, 100))
    client(s, produce_request(3, acks=1))
    (seen,) = upstream(s, appended(3)).responses
    assert seen.leaders is not None
