"""KRaft and share-group messages through a real kproxy process (issue 3).

No peer in the lab sends Vote, BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot,
DescribeQuorum v2, UpdateRaftVoter, ShareFetch or ShareAcknowledge, so kproxy sits in
front of a scripted upstream (``tests/scripted_broker.py``) that encodes every answer
with kio, and a raw client (plain socket, kio frames) talks to kproxy's real sockets.

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
cluster's and every other byte as sent. A property test sends 20 random kio responses
(and requests) of each type through kproxy with a fixed seed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import itertools
import re
import socket
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from tests.kio_expected import ExpectedEndpoint, expected_endpoints, replace_endpoints
from tests.kio_strategies import message_strategy
from tests.kio_support import (
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    kio_message_class,
    kio_versions,
)
from tests.kproxy_process import KproxyProcess
from tests.peers.net import LOOPBACK, wait_until
from tests.scripted_answers import (
    CLIENT_LISTENER,
    CONTROLLER_LISTENER,
    METADATA_TOPIC,
    Sub,
    build,
    field_class,
)
from tests.scripted_broker import ScriptedBroker

CLIENT_ID = "kraft-share-test"
MAX_NODE_ID = 1000  # listeners.max_node_id, set explicitly below
UNMAPPABLE_ID = 5000  # > MAX_NODE_ID: kproxy cannot give it a port
LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+) for (\S+)")
NODE_AT = re.compile(r"node (-?\d+) is at (\S+) \(dialled as")
SHARE_TOPIC_ID = uuid.UUID("5ca1ab1e-0000-4000-8000-00000000cafe")
DIRECTORY_ID = uuid.UUID("d1d1d1d1-0000-4000-8000-000000000002")
_CORRELATION = itertools.count(1000)

METADATA, FIND_COORDINATOR, API_VERSIONS = 3, 10, 18
VOTE, BEGIN_QUORUM, END_QUORUM, DESCRIBE_QUORUM, FETCH_SNAPSHOT = 52, 53, 54, 55, 59
DESCRIBE_CLUSTER, SHARE_FETCH, SHARE_ACK = 60, 78, 79
ADD_RAFT_VOTER, UPDATE_RAFT_VOTER = 80, 82

# (api key, version) of every response checked against the scripted cluster's answers.
RESPONSE_CASES = [
    (VOTE, 0),
    (VOTE, 1),
    (VOTE, 2),
    (BEGIN_QUORUM, 0),
    (BEGIN_QUORUM, 1),
    (END_QUORUM, 0),
    (END_QUORUM, 1),
    (FETCH_SNAPSHOT, 0),
    (FETCH_SNAPSHOT, 1),
    (DESCRIBE_QUORUM, 0),
    (DESCRIBE_QUORUM, 1),
    (DESCRIBE_QUORUM, 2),
    (UPDATE_RAFT_VOTER, 0),
    (SHARE_FETCH, 1),
    (SHARE_FETCH, 2),
    (SHARE_ACK, 1),
    (SHARE_ACK, 2),
    (DESCRIBE_CLUSTER, 0),
    (DESCRIBE_CLUSTER, 1),
    (DESCRIBE_CLUSTER, 2),
    (METADATA, 1),
    (METADATA, 12),
    (FIND_COORDINATOR, 3),
    (FIND_COORDINATOR, 6),
]
# Versions whose answer carries no endpoint at all (the field arrived later).
NO_ENDPOINTS = {(VOTE, 0), (BEGIN_QUORUM, 0), (END_QUORUM, 0), (FETCH_SNAPSHOT, 0)}
NO_ENDPOINTS |= {(DESCRIBE_QUORUM, 0), (DESCRIBE_QUORUM, 1)}

# Random responses of every version that can carry endpoints (Metadata v1 is the one
# the scripted cluster's own discovery uses; v12 stands for it).
PROPERTY_RESPONSES = [c for c in RESPONSE_CASES if c not in NO_ENDPOINTS and c != (METADATA, 1)]
ENDPOINT_REQUESTS = [
    (BEGIN_QUORUM, 1),
    (END_QUORUM, 1),
    (ADD_RAFT_VOTER, 0),
    (ADD_RAFT_VOTER, 1),
    (UPDATE_RAFT_VOTER, 0),
]

PROPERTY_SETTINGS = settings(
    max_examples=20,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --------------------------------------------------------------------------- requests


def listener_entries(endpoints: list[tuple[str, str, int]]) -> Sub:
    return Sub(lambda c: tuple(build(c, name=n, host=h, port=p) for n, h, p in endpoints))


def sample_request(
    api_key: int, version: int, endpoints: list[tuple[str, str, int]] | None = None
) -> Any:
    """A plausible kio request of (api_key, version); ``endpoints`` fill its listener
    array (LeaderEndpoints / Listeners) where it has one."""
    cls = kio_message_class(api_key, version, "request")
    assert cls is not None, (api_key, version)
    listeners = listener_entries(
        endpoints if endpoints is not None else [("CONTROLLER", "voter.elsewhere.invalid", 9093)]
    )

    def kraft_partition(c: type) -> Any:
        return (
            build(
                c,
                partition_index=0,
                replica_epoch=18,
                replica_id=2,
                replica_directory_id=DIRECTORY_ID,
                voter_directory_id=DIRECTORY_ID,
                last_offset_epoch=17,
                last_offset=999,
                pre_vote=True,
                leader_id=1,
                leader_epoch=17,
                preferred_successors=(2, 3),
                preferred_candidates=Sub(
                    lambda pc: (build(pc, candidate_id=2, candidate_directory_id=DIRECTORY_ID),)
                ),
                partition=0,
                current_leader_epoch=17,
                snapshot_id=Sub(lambda s: build(s, end_offset=4242, epoch=17)),
                position=0,
            ),
        )

    def share_partition(c: type, index: int) -> Any:
        return build(
            c,
            partition_index=index,
            acknowledgement_batches=Sub(
                lambda b: (build(b, first_offset=0, last_offset=9, acknowledge_types=(1,)),)
            ),
        )

    def topics(c: type) -> Any:
        if api_key in (SHARE_FETCH, SHARE_ACK):
            partitions = Sub(lambda pc: tuple(share_partition(pc, i) for i in (0, 1, 2)))
            return (build(c, topic_id=SHARE_TOPIC_ID, partitions=partitions),)
        if api_key == METADATA:
            return (build(c, name="kraft-share", topic_id=None),)
        return (
            build(
                c, topic_name=METADATA_TOPIC, name=METADATA_TOPIC, partitions=Sub(kraft_partition)
            ),
        )

    return build(
        cls,
        # KRaft
        cluster_id="scripted-kraft-cluster",
        voter_id=2,
        replica_id=2,
        max_bytes=1 << 20,
        topics=Sub(topics),
        leader_endpoints=listeners,
        listeners=listeners,
        timeout=datetime.timedelta(seconds=30),
        voter_directory_id=DIRECTORY_ID,
        ack_when_committed=True,
        current_leader_epoch=17,
        k_raft_version_feature=Sub(
            lambda c: build(c, min_supported_version=0, max_supported_version=1)
        ),
        # DescribeCluster: ask a controller for the controllers (KIP-919).
        include_cluster_authorized_operations=False,
        endpoint_type=2,
        include_fenced_brokers=True,
        # Share groups
        group_id="share-group",
        member_id="member-1",
        share_session_epoch=0,
        max_wait=datetime.timedelta(milliseconds=500),
        min_bytes=1,
        max_records=500,
        batch_size=500,
        forgotten_topics_data=(),
        # Metadata / FindCoordinator / ApiVersions
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
        key="share-group",
        key_type=0,
        coordinator_keys=("group-a", "group-b", "group-c"),
        client_software_name="kraft-share-test",
        client_software_version="1.0",
    )


# --------------------------------------------------------------------------- client


class Exchange(NamedTuple):
    correlation_id: int
    raw: bytes  # the whole response frame the client read (size prefix included)
    response: Any  # decoded with kio


class RawClient:
    """A plain-socket Kafka client that encodes and decodes with kio only."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((LOOPBACK, port), timeout=timeout)

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def _read_exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("kproxy closed the connection instead of answering")
            buf += chunk
        return bytes(buf)

    def call(self, request: Any) -> Exchange:
        corr = next(_CORRELATION)
        self.sock.sendall(encode_request_frame(request, corr, CLIENT_ID))
        head = self._read_exactly(4)
        raw = head + self._read_exactly(struct.unpack(">i", head)[0])
        cls = kio_message_class(type(request).__api_key__, type(request).__version__, "response")
        assert cls is not None
        got, response = decode_response_frame(cls, raw)
        assert got == corr, f"correlation id {got}, expected {corr}"
        return Exchange(corr, raw, response)


# --------------------------------------------------------------------------- environment


def listener_ports(kp: KproxyProcess) -> dict[str, int]:
    """kproxy's listeners as it logged them: ``{"bootstrap": P, "node-1": P1, ...}``."""
    return {name: int(port) for port, name in LISTENING.findall(kp.log())}


def advertised_from_log(kp: KproxyProcess) -> dict[int, tuple[str, int]]:
    """The address kproxy last logged for each node (``node N is at H:P``)."""
    out: dict[int, tuple[str, int]] = {}
    for node, address in NODE_AT.findall(kp.log()):
        host, _, port = address.rpartition(":")
        out[int(node)] = (host, int(port))
    return out


def mappable(node_id: int | None) -> bool:
    return node_id is not None and 0 <= node_id <= MAX_NODE_ID


@dataclasses.dataclass
class Env:
    broker: ScriptedBroker
    kp: KproxyProcess

    def ports_for(self, msg: Any) -> dict[str, int]:
        """kproxy's listener ports, once every mappable node of ``msg`` has one."""
        wanted = {f"node-{e.node_id}" for e in expected_endpoints(msg) if mappable(e.node_id)}

        def logged() -> dict[str, int] | None:
            ports = listener_ports(self.kp)
            return ports if wanted <= ports.keys() else None

        return wait_until(logged, 10, what=f"kproxy to log listeners for {sorted(wanted)}")

    def call(self, client: RawClient, request: Any) -> Exchange:
        try:
            return client.call(request)
        except (ConnectionError, TimeoutError) as exc:
            pytest.fail(f"{exc}; kproxy log tail:\n{self.kp.log()[-4000:]}")

    def sent(self, exchange: Exchange) -> Any:
        """The kio response the scripted broker sent for this exchange."""
        received = self.broker.find(CLIENT_ID, exchange.correlation_id)
        assert received is not None, "the scripted broker never got this request"
        assert received.response is not None
        return received.response

    def assert_healthy(self) -> None:
        """kproxy is up: a new connection still gets Metadata with only kproxy addresses."""
        assert self.kp.proc is not None and self.kp.proc.poll() is None, self.kp.log()[-4000:]
        with RawClient(self.kp.bootstrap_port) as client:
            ex = self.call(client, sample_request(METADATA, 1))
        check_proxied(self, self.sent(ex), ex)
        assert not self.broker.errors, self.broker.errors


@contextlib.contextmanager
def proxied_cluster(tmp: Path) -> Iterator[Env]:
    with ScriptedBroker(node_ids=(1, 2, 3)) as broker:
        kp = KproxyProcess(
            tmp,
            [broker.bootstrap],
            cluster={"dial_overrides": broker.dial_overrides},
            # The KRaft requests that draw these answers are the controller plane.
            listeners={"max_node_id": MAX_NODE_ID, "role": "controller"},
        )
        with kp:
            # kproxy's own Metadata v1 (client id "kproxy") names nodes 1-3.
            wait_until(
                lambda: {"node-1", "node-2", "node-3"} <= listener_ports(kp).keys(),
                30,
                what="kproxy to open a listener for every scripted node",
            )
            assert broker.requests(METADATA, client_id="kproxy")
            yield Env(broker, kp)


@pytest.fixture(scope="module")
def shared_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    with proxied_cluster(tmp_path_factory.mktemp("kraft-share")) as env:
        yield env


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    with proxied_cluster(tmp_path) as fresh:
        yield fresh


# --------------------------------------------------------------------------- oracle

_UNMAPPED = "\x00unmapped"


def _has(obj: Any, name: str) -> bool:
    return any(f.name == name for f in dataclasses.fields(obj))


def _unmapped(obj: Any) -> bool:
    return dataclasses.is_dataclass(obj) and _has(obj, "host") and obj.host == _UNMAPPED


def _settle(obj: Any) -> Any:
    """Apply kproxy's rules to the endpoints marked unmappable (see proxied_view)."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, tuple) and any(dataclasses.is_dataclass(v) for v in value):
            changes[f.name] = tuple(
                _settle(v)
                for v in value
                if not (_unmapped(v) and not _has(v, "error_code"))  # removed from its array
            )
        elif dataclasses.is_dataclass(value):
            changes[f.name] = _settle(value)
    if _unmapped(obj):
        if _has(obj, "error_code"):  # FindCoordinator (top level v0-3, Coordinators[] v4+)
            changes.update(error_code=ErrorCode.coordinator_not_available, host="", port=-1)
        else:  # UpdateRaftVoterResponse.CurrentLeader
            changes.update(host="", port=0)
    return dataclasses.replace(obj, **changes) if changes else obj


def proxied_view(msg: Any, ports: dict[str, int]) -> Any:
    """What a client must get through kproxy for the upstream response ``msg``."""

    def new(ep: ExpectedEndpoint) -> tuple[str, int]:
        if mappable(ep.node_id):
            return LOOPBACK, ports[f"node-{ep.node_id}"]
        if ep.node_id is not None and ep.node_id < 0 and ep.host == "":
            return ep.host, ep.port  # no node, no address: an error answer, untouched
        return _UNMAPPED, 0

    return _settle(replace_endpoints(msg, new))


def check_proxied(env: Env, original: Any, exchange: Exchange) -> None:
    """The client's view of ``original`` through kproxy is exactly right."""
    received = exchange.response
    ports = env.ports_for(original)
    kproxy_ports = set(ports.values())
    got = expected_endpoints(received)
    for ep in got:
        if ep.host == "" and not mappable(ep.node_id):
            continue  # FindCoordinator / UpdateRaftVoter: unmappable, emptied in place
        assert (ep.host, ep.port) == (LOOPBACK, ports[f"node-{ep.node_id}"]), ep
        assert ep.port in kproxy_ports
    want = proxied_view(original, ports)
    assert [e.node_id for e in got] == [e.node_id for e in expected_endpoints(want)]
    assert received == want
    # No upstream address (all are *.invalid) survives anywhere in the frame, not even in
    # bytes kio would not decode. Non-address strings may contain ".invalid" too
    # (hypothesis draws constants from loaded modules), so count against what kio writes
    # for the expected view rather than asking for none. Not byte equality: kproxy may
    # leave an emptied tagged NodeEndpoints in place where kio would omit it.
    expected_frame = encode_response_frame(want, exchange.correlation_id)
    assert exchange.raw.count(b".invalid") == expected_frame.count(b".invalid")


# --------------------------------------------------------------------------- tests


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
    ports = listener_ports(env.kp)
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
    ports = listener_ports(env.kp)
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


# --------------------------------------------------------------------------- properties


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
    if _has(drawn, "node_endpoints") and not drawn.node_endpoints:
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
    ports = listener_ports(kp)
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
