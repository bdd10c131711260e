"""KRaft and share-group messages through a real kproxy process (issue 3).

No peer here sends Vote, BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot, DescribeQuorum
v2, UpdateRaftVoter, ShareFetch or ShareAcknowledge on demand, in every version and with
a node kproxy cannot map (a real quorum and real share consumers go through kproxy in
``test_kraft_quorum.py`` and ``test_share_groups.py``), so kproxy sits in front of a
scripted upstream (``tests/scripted_broker.py``) that encodes every answer with kio, and
a raw client (plain socket, kio frames) talks to kproxy's real sockets.

For every response the client decodes with kio:

* every endpoint carries 127.0.0.1 and the port kproxy logged for that node
  (``listening on 127.0.0.1:P for node-N``), no ``.invalid`` byte reaches the client,
  and the node ids of the endpoints are the original ones;
* the whole decoded message equals the scripted one with exactly kproxy's documented
  changes (:func:`proxied_view`): mappable endpoints rewritten, unmappable ones removed
  from their arrays (FindCoordinator: COORDINATOR_NOT_AVAILABLE with an empty host;
  UpdateRaftVoterResponse.CurrentLeader: empty host, port 0), nothing else touched;
* kproxy is still up and answering afterwards.

Requests that carry endpoints (Begin/EndQuorumEpoch LeaderEndpoints, Add/UpdateRaftVoter
Listeners) must reach the scripted broker with kproxy's node addresses mapped back to the
cluster's and every other byte as sent. test_kraft_share_properties.py sends 20 random kio responses
(and requests) of each type through kproxy with a fixed seed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from tests.integration.kraft_share.cases import (
    API_VERSIONS,
    BEGIN_QUORUM,
    CLIENT_ID,
    DESCRIBE_CLUSTER,
    DESCRIBE_QUORUM,
    ENDPOINT_REQUESTS,
    FETCH_SNAPSHOT,
    FIND_COORDINATOR,
    METADATA,
    NO_ENDPOINTS,
    RESPONSE_CASES,
    SHARE_ACK,
    SHARE_FETCH,
    UNMAPPABLE_ID,
    UPDATE_RAFT_VOTER,
    VOTE,
    listener_entries,
    sample_request,
)
from tests.integration.kraft_share.proxied import (
    Env,
    RawClient,
    check_proxied,
    mappable,
    proxied_cluster,
)
from tests.kio_build import Sub, build, field_class
from tests.kio_expected import expected_endpoints, replace_endpoints
from tests.kio_support import kio_message_class, kio_versions
from tests.peers.net import LOOPBACK
from tests.scripted_answers import CLIENT_LISTENER, CONTROLLER_LISTENER


@pytest.fixture(scope="module")
def shared_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    with proxied_cluster(tmp_path_factory.mktemp("kraft-share")) as env:
        yield env


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    with proxied_cluster(tmp_path) as fresh:
        yield fresh


@pytest.mark.parametrize(
    ("api_key", "version"), RESPONSE_CASES, ids=[f"{k}v{v}" for k, v in RESPONSE_CASES]
)
def test_responses_carry_only_kproxy_addresses(shared_env: Env, api_key: int, version: int) -> None:
    with RawClient(shared_env.kp.bootstrap_port) as client:
        ex = shared_env.call(client, sample_request(api_key, version))
        original = shared_env.sent(ex)
        assert (len(expected_endpoints(original)) == 0) == ((api_key, version) in NO_ENDPOINTS)
        assert all(".invalid" in e.host for e in expected_endpoints(original))
        check_proxied(shared_env, original, ex)
        # The same connection keeps working.
        follow = shared_env.call(client, sample_request(METADATA, 1))
        check_proxied(shared_env, shared_env.sent(follow), follow)
    shared_env.assert_healthy()


def test_uint16_ports_and_tagged_endpoints_are_rewritten(env: Env) -> None:
    """Controller ports above 32767 (uint16), tagged NodeEndpoints and the int32
    UpdateRaftVoter port: what the client gets, field by field."""
    ports = env.kp.listener_ports()
    with RawClient(env.kp.bootstrap_port) as client:
        vote = env.call(client, sample_request(VOTE, 2)).response
        assert [(e.node_id, e.host, e.port) for e in vote.node_endpoints] == [
            (n, LOOPBACK, ports[f"node-{n}"]) for n in (1, 2, 3)
        ]
        quorum = env.call(client, sample_request(DESCRIBE_QUORUM, 2)).response
        assert [
            (node.node_id, [(lst.name, lst.host, lst.port) for lst in node.listeners])
            for node in quorum.nodes
        ] == [
            (
                n,
                [
                    (CONTROLLER_LISTENER, LOOPBACK, ports[f"node-{n}"]),
                    ("CONTROLLER_SSL", LOOPBACK, ports[f"node-{n}"]),
                ],
            )
            for n in (1, 2, 3)
        ]
        update = env.call(client, sample_request(UPDATE_RAFT_VOTER, 0)).response
        leader = update.current_leader
        assert (leader.leader_id, leader.leader_epoch, leader.host, leader.port) == (
            1,
            env.broker.leader_epoch,
            LOOPBACK,
            ports["node-1"],
        )
        snapshot = env.call(client, sample_request(FETCH_SNAPSHOT, 1)).response
        part = snapshot.topics[0].partitions[0]
        assert (part.current_leader.leader_id, part.unaligned_records) == (1, b"scripted-snapshot")
        assert {e.port for e in snapshot.node_endpoints} == {ports[f"node-{n}"] for n in (1, 2, 3)}
    env.assert_healthy()


def test_rewritten_node_addresses_reach_the_right_node(env: Env) -> None:
    """The address a client got from a KRaft/share answer is a working kproxy listener
    that leads to that node (its client listener, as Metadata advertises it)."""
    with RawClient(env.kp.bootstrap_port) as client:
        vote = env.call(client, sample_request(VOTE, 1)).response
        share = env.call(client, sample_request(SHARE_FETCH, 2)).response
    targets = {(e.host, e.port): e.node_id for e in vote.node_endpoints}
    targets.update({(e.host, e.port): e.node_id for e in share.node_endpoints})
    assert len(targets) == 3
    for (host, port), node_id in sorted(targets.items(), key=lambda t: t[1]):
        assert host == LOOPBACK
        with RawClient(port) as client:
            ex = env.call(client, sample_request(DESCRIBE_QUORUM, 2))
        got = env.broker.find(CLIENT_ID, ex.correlation_id)
        assert got is not None
        assert (got.node_id, got.listener) == (node_id, CLIENT_LISTENER)
        check_proxied(env, got.response, ex)
    env.assert_healthy()


@pytest.mark.parametrize(
    ("api_key", "version"), ENDPOINT_REQUESTS, ids=[f"{k}v{v}" for k, v in ENDPOINT_REQUESTS]
)
def test_request_endpoints_are_mapped_back(env: Env, api_key: int, version: int) -> None:
    """kproxy's own node addresses in LeaderEndpoints / Listeners become the node's
    cluster address; every other address and byte reaches the broker as sent."""
    ports = env.kp.listener_ports()
    nodes = env.broker.nodes
    sent_endpoints = [
        ("CONTROLLER", LOOPBACK, ports["node-1"]),
        ("REPLICATION", LOOPBACK, ports["node-3"]),
        ("EXTERNAL", "voter.elsewhere.invalid", 65000),  # uint16 above 32767
        ("BOOTSTRAP", LOOPBACK, ports["bootstrap"]),  # not a node's address
        ("LOCAL", "localhost", ports["node-2"]),  # another host: not kproxy's address
    ]
    request = sample_request(api_key, version, sent_endpoints)
    back = {
        (LOOPBACK, ports["node-1"]): (nodes[1].host, nodes[1].port),
        (LOOPBACK, ports["node-3"]): (nodes[3].host, nodes[3].port),
    }
    want = replace_endpoints(request, lambda ep: back.get((ep.host, ep.port), (ep.host, ep.port)))
    with RawClient(env.kp.bootstrap_port) as client:
        ex = env.call(client, request)
    got = env.broker.find(CLIENT_ID, ex.correlation_id)
    assert got is not None
    assert got.request == want
    if got.response is not None and expected_endpoints(got.response):
        check_proxied(env, got.response, ex)
    env.assert_healthy()


def test_unmappable_node_ids_are_removed(env: Env) -> None:
    """Node ids kproxy cannot give a port (> max_node_id, negative) never reach the
    client: removed from arrays, FindCoordinator -> COORDINATOR_NOT_AVAILABLE,
    UpdateRaftVoter's CurrentLeader emptied."""
    broker = env.broker
    n1, n2 = broker.nodes[1], broker.nodes[2]
    far = ("far-away.kraft.invalid", 49999)

    def answer(api_key: int, version: int, **values: Any) -> Any:
        cls = kio_message_class(api_key, version, "response")
        assert cls is not None
        base = broker.handlers[api_key](version, sample_request(api_key, version))
        return dataclasses.replace(
            base,
            **{
                k: v.make(field_class(cls, k)) if isinstance(v, Sub) else v
                for k, v in values.items()
            },
        )

    def node_endpoints(*entries: tuple[int, str, int]) -> Sub:
        return Sub(
            lambda c: tuple(
                build(c, node_id=i, host=h, port=p, rack="rack-x") for i, h, p in entries
            )
        )

    scripted = [
        answer(
            VOTE,
            1,
            node_endpoints=node_endpoints(
                (UNMAPPABLE_ID, *far), (1, n1.host, n1.controller_port), (-1, *far)
            ),
        ),
        answer(BEGIN_QUORUM, 1, node_endpoints=node_endpoints((-7, *far))),
        answer(
            FETCH_SNAPSHOT,
            1,
            node_endpoints=node_endpoints((2, n2.host, n2.controller_port), (UNMAPPABLE_ID, *far)),
        ),
        answer(
            DESCRIBE_QUORUM,
            2,
            nodes=Sub(
                lambda c: (
                    build(
                        c,
                        node_id=UNMAPPABLE_ID,
                        listeners=listener_entries(
                            [("CONTROLLER", far[0], far[1]), ("OTHER", far[0], 1)]
                        ),
                    ),
                    build(
                        c,
                        node_id=2,
                        listeners=listener_entries([("CONTROLLER", n2.host, n2.controller_port)]),
                    ),
                )
            ),
        ),
        answer(
            SHARE_FETCH,
            2,
            node_endpoints=node_endpoints(
                (UNMAPPABLE_ID, far[0], 2**31 - 1), (2, n2.host, n2.port)
            ),
        ),
        answer(SHARE_ACK, 1, node_endpoints=node_endpoints((UNMAPPABLE_ID, far[0], 70000))),
        answer(
            DESCRIBE_CLUSTER,
            2,
            brokers=Sub(
                lambda c: (
                    build(
                        c,
                        broker_id=UNMAPPABLE_ID,
                        host=far[0],
                        port=far[1],
                        rack=None,
                        is_fenced=True,
                    ),
                    build(c, broker_id=1, host=n1.host, port=n1.port, rack=None, is_fenced=False),
                )
            ),
        ),
        answer(FIND_COORDINATOR, 3, node_id=UNMAPPABLE_ID, host=far[0], port=far[1]),
        answer(
            FIND_COORDINATOR,
            6,
            coordinators=Sub(
                lambda c: (
                    build(
                        c,
                        key="group-a",
                        node_id=UNMAPPABLE_ID,
                        host=far[0],
                        port=far[1],
                        error_code=ErrorCode.none,
                        error_message=None,
                    ),
                    build(
                        c,
                        key="group-b",
                        node_id=2,
                        host=n2.host,
                        port=n2.port,
                        error_code=ErrorCode.none,
                        error_message=None,
                    ),
                )
            ),
        ),
        answer(
            UPDATE_RAFT_VOTER,
            0,
            current_leader=Sub(
                lambda c: build(
                    c, leader_id=UNMAPPABLE_ID, leader_epoch=3, host=far[0], port=far[1]
                )
            ),
        ),
        answer(
            UPDATE_RAFT_VOTER,
            0,
            current_leader=Sub(lambda c: build(c, leader_id=-1, leader_epoch=3, host="", port=0)),
        ),
    ]
    with RawClient(env.kp.bootstrap_port) as client:
        for original in scripted:
            key, version = type(original).__api_key__, type(original).__version__
            broker.respond_once(original, client_id=CLIENT_ID)
            ex = env.call(client, sample_request(key, version))
            assert env.sent(ex) == original
            check_proxied(env, original, ex)
            ids = [e.node_id for e in expected_endpoints(ex.response) if e.host]
            assert all(mappable(i) for i in ids), (key, version, ids)
    log = env.kp.log()
    assert f"node {UNMAPPABLE_ID} has no kproxy port" in log
    assert f"for node-{UNMAPPABLE_ID}" not in log
    env.assert_healthy()


def test_api_versions_through_kproxy(env: Env) -> None:
    """ApiVersions answered by the scripted broker (kio's versions) reaches the client
    clamped, never above what the broker offered, and decodable by kio."""
    for version in (0, 3):
        with RawClient(env.kp.bootstrap_port) as client:
            response = env.call(client, sample_request(API_VERSIONS, version)).response
        offered = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert {VOTE, DESCRIBE_QUORUM, SHARE_FETCH, UPDATE_RAFT_VOTER} <= offered.keys()
        for key, (low, high) in offered.items():
            kio_range = kio_versions(key, "response")
            assert kio_range[0] <= low <= high <= kio_range[-1], (key, low, high)
    env.assert_healthy()


def test_update_raft_voter_leader_does_not_become_a_dial_address(env: Env) -> None:
    """UpdateRaftVoterResponse.CurrentLeader names the leader's CONTROLLER endpoint (its
    port is int32, unlike every other KRaft port). A client that then connects to that
    node's kproxy listener must still reach the node's client listener."""
    with RawClient(env.kp.bootstrap_port) as client:
        leader = env.call(client, sample_request(UPDATE_RAFT_VOTER, 0)).response.current_leader
    with RawClient(leader.port) as client:
        ex = env.call(client, sample_request(METADATA, 1))
    got = env.broker.find(CLIENT_ID, ex.correlation_id)
    assert got is not None
    assert (got.node_id, got.listener) == (leader.leader_id, CLIENT_LISTENER)
