"""Random kio responses (20 of each type that can carry endpoints) and requests (of each
type that carries endpoints) through a real kproxy, with a fixed seed: every response
decodes to the scripted one with exactly kproxy's documented changes, every request
reaches the scripted broker with kproxy's node addresses mapped back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, seed
from hypothesis import strategies as st

from tests.integration.kraft_share.cases import (
    CLIENT_ID,
    ENDPOINT_REQUESTS,
    PROPERTY_RESPONSES,
    PROPERTY_SETTINGS,
    UNMAPPABLE_ID,
    sample_request,
)
from tests.integration.kraft_share.proxied import (
    Env,
    RawClient,
    advertised_from_log,
    check_proxied,
    proxied_cluster,
)
from tests.kio_build import field_class
from tests.kio_expected import ExpectedEndpoint, expected_endpoints, has_field, replace_endpoints
from tests.kio_strategies import message_strategy
from tests.kio_support import kio_message_class
from tests.peers.net import LOOPBACK


@pytest.fixture(scope="module")
def property_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    with proxied_cluster(tmp_path_factory.mktemp("kraft-share-property")) as env:
        yield env


@pytest.fixture(scope="module")
def request_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """Its own kproxy: random int32 endpoints in responses would move nodes' addresses."""
    with proxied_cluster(tmp_path_factory.mktemp("kraft-share-requests")) as env:
        yield env


def _marked(ep: ExpectedEndpoint) -> tuple[str, int]:
    return f"{ep.host}.n{ep.node_id}.prop.invalid", ep.port


_ID_FIELDS = ("node_id", "broker_id", "leader_id")


def _small_ids(obj: Any) -> Any:
    """Node ids folded into -1..5: random int32 ids are almost never mappable, these are
    (0-3 known or new nodes that get a listener, -1 and UNMAPPABLE_ID still removed)."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if f.name in _ID_FIELDS and isinstance(value, int) and value != UNMAPPABLE_ID:
            changes[f.name] = value % 7 - 1
        elif isinstance(value, tuple) and any(dataclasses.is_dataclass(v) for v in value):
            changes[f.name] = tuple(
                _small_ids(v) if dataclasses.is_dataclass(v) else v for v in value
            )
        elif dataclasses.is_dataclass(value):
            changes[f.name] = _small_ids(value)
    return dataclasses.replace(obj, **changes) if changes else obj


@pytest.mark.parametrize(
    ("api_key", "version"), PROPERTY_RESPONSES, ids=[f"{k}v{v}" for k, v in PROPERTY_RESPONSES]
)
@PROPERTY_SETTINGS
@seed(20260917)
@given(data=st.data())
def test_random_responses_through_kproxy(
    property_env: Env, api_key: int, version: int, data: st.DataObject
) -> None:
    cls = kio_message_class(api_key, version, "response")
    assert cls is not None
    drawn = data.draw(message_strategy(cls), label="response")
    if has_field(drawn, "node_endpoints") and not drawn.node_endpoints:
        # An absent tagged NodeEndpoints is covered; also give empty ones another chance.
        item = message_strategy(field_class(cls, "node_endpoints"))
        more = data.draw(st.lists(item, max_size=3).map(tuple), label="node_endpoints")
        drawn = dataclasses.replace(drawn, node_endpoints=more)
    if data.draw(st.booleans(), label="small node ids"):
        drawn = _small_ids(drawn)
    original = replace_endpoints(drawn, _marked)
    property_env.broker.respond_once(original, client_id=CLIENT_ID)
    with RawClient(property_env.kp.bootstrap_port) as client:
        ex = property_env.call(client, sample_request(api_key, version))
    assert property_env.sent(ex) == original
    assert not any(".invalid" in e.host for e in expected_endpoints(ex.response))
    check_proxied(property_env, original, ex)


@pytest.mark.parametrize(
    ("api_key", "version"), ENDPOINT_REQUESTS, ids=[f"{k}v{v}" for k, v in ENDPOINT_REQUESTS]
)
@PROPERTY_SETTINGS
@seed(20260918)
@given(data=st.data())
def test_random_requests_through_kproxy(
    request_env: Env, api_key: int, version: int, data: st.DataObject
) -> None:
    """Random endpoint-bearing requests, some addresses set to kproxy's own node
    listeners: the broker gets those mapped back (to the address kproxy last logged for
    the node), everything else as sent."""
    kp = request_env.kp
    ports = kp.listener_ports()
    own = [(LOOPBACK, ports[f"node-{n}"]) for n in (1, 2, 3)]
    cls = kio_message_class(api_key, version, "request")
    assert cls is not None
    drawn = data.draw(message_strategy(cls), label="request")
    choices = data.draw(
        st.lists(
            st.sampled_from([None, *own]),
            min_size=len(expected_endpoints(drawn)),
            max_size=len(expected_endpoints(drawn)),
        ),
        label="kproxy addresses",
    )
    picks = iter(choices)
    request = replace_endpoints(
        drawn, lambda ep: next(picks) or (f"{ep.host}.req.invalid", ep.port)
    )
    known = advertised_from_log(kp)
    back = {(LOOPBACK, ports[f"node-{n}"]): known[n] for n in (1, 2, 3)}
    want = replace_endpoints(request, lambda ep: back.get((ep.host, ep.port), (ep.host, ep.port)))
    with RawClient(kp.bootstrap_port) as client:
        ex = request_env.call(client, request)
    got = request_env.broker.find(CLIENT_ID, ex.correlation_id)
    assert got is not None
    assert got.request == want


def test_property_envs_survived(property_env: Env, request_env: Env) -> None:
    property_env.assert_healthy()
    request_env.assert_healthy()
