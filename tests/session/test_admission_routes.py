"""Admission is written once (`kproxy.session.admission.route_of`): a rule added there,
or a policy a reload changes, holds for a request the fast lane would take and for the
same request on the general path, with no line of code for either path."""

from __future__ import annotations

import pytest

from kproxy.session import admission
from kproxy.session.policy import ApiPolicy
from tests.session.lane_driver import HEARTBEAT, Driven, heartbeat_request, heartbeat_response

# The rule is patched into the module's namespace: compiled, mypyc binds the call early.
pytestmark = pytest.mark.pure_python


def _warmed(lane: bool) -> Driven:
    """A session past each side's first frame (which the general path always checks)."""
    driven = Driven(lane, 100, frozenset(), awaits=False)
    driven.client(heartbeat_request(100), 1.0)
    driven.upstream(heartbeat_response(100), 1.0)
    return driven


def _heartbeat_outcomes(driven: Driven) -> list[tuple[object, ...]]:
    """A Heartbeat read alone (the lane's case) and one read in two parts (the general
    path's): what each made, as (refused keys, bytes to the broker, close)."""
    alone = driven.client(heartbeat_request(1), 1.0)
    request = heartbeat_request(2)
    driven.client(request[:2], 1.0)
    split = driven.client(request[2:], 1.0)
    return [(step[6], len(step[1]) > 0, step[7]) for step in (alone, split)]


def _deny_heartbeat(
    key: int, version: int, refused_apis: frozenset[int], denied: frozenset[int]
) -> int:
    if key == HEARTBEAT:
        return admission.DENY
    return ROUTE_OF(key, version, refused_apis, denied)


ROUTE_OF = admission.route_of


def test_without_the_rule_the_lane_takes_the_request_alone() -> None:
    driven = _warmed(lane=True)
    assert _heartbeat_outcomes(driven) == [([], True, None), ([], True, None)]
    assert driven.taken == 1  # the read alone; the split one is the general path's


@pytest.mark.parametrize("lane", [True, False])
def test_a_rule_added_to_admission_holds_on_both_paths(
    lane: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(admission, "route_of", _deny_heartbeat)
    driven = _warmed(lane)
    refused = ([HEARTBEAT], False, None)  # answered with the authorization error
    assert _heartbeat_outcomes(driven) == [refused, refused]
    assert driven.taken == 0


@pytest.mark.parametrize("lane", [True, False])
def test_a_reloaded_policy_holds_for_an_established_session_on_both_paths(lane: bool) -> None:
    driven = _warmed(lane)
    policy = driven.session.policy
    assert isinstance(policy, ApiPolicy)
    policy.update("gateway", frozenset({HEARTBEAT}), False)  # what a reload does
    refused = ([HEARTBEAT], False, None)
    assert _heartbeat_outcomes(driven) == [refused, refused]
    policy.update("gateway", frozenset(), False)
    assert _heartbeat_outcomes(driven) == [([], True, None), ([], True, None)]


def test_the_shared_routes_are_route_of_for_every_known_request() -> None:
    policy = ApiPolicy("gateway", frozenset({20}))
    routes = admission.admission_for(policy, admission.CLIENT_REFUSED_APIS)
    assert routes is admission.admission_for(policy, admission.CLIENT_REFUSED_APIS)
    for key, info in admission.APIS.items():
        for version in info.headers:
            want = admission.route_of(key, version, routes.refused_apis, policy.denied)
            assert routes.route(key, version) == want, (key, version)
    assert routes.route(20, 5) == admission.DENY
    assert routes.route(9999, 0) == admission.CLOSE
    assert routes.route(18, 999) == admission.ANSWER
