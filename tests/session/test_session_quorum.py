"""Sessions of a KRaft quorum carried through kproxy (`quorum.controllers`, KIP-853).

On a controller's port every endpoint names a controller and is told as that
controller's kproxy port, requests reach the controller byte for byte (no UpdateRaftVoter
loop), nothing is learned; on a client port the responses that name controller
listeners (DescribeQuorum forwarded by a broker) are mapped by controller, never to a
broker's node port. Messages are encoded and decoded by kio.
"""

from __future__ import annotations

import uuid

from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest
from kio.schema.describe_quorum.v2.request import PartitionData as RequestPartition
from kio.schema.describe_quorum.v2.request import TopicData as RequestTopic
from kio.schema.describe_quorum.v2.response import (
    DescribeQuorumResponse,
    Listener,
    Node,
    PartitionData,
    TopicData,
)
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.schema.update_raft_voter.v0.request import KRaftVersionFeature, UpdateRaftVoterRequest
from kio.schema.update_raft_voter.v0.request import Listener as VoterListener
from kio.static.primitive import i16, i32, i64, u16

from kproxy.config.settings import parse_config
from kproxy.runtime.quorum import QuorumMap
from kproxy.session import ProxySession, SessionLimits
from kproxy.session.admission import CLIENT_REFUSED_APIS
from tests.kio_support import decode_response_frame, encode_request_frame, encode_response_frame
from tests.session.frames import address_map, client, joined, upstream

KPROXY_HOST = "127.0.0.1"
CONTROLLER_PORTS = {1: 29001, 2: 29002, 3: 29003}
LIMITS = SessionLimits(1 << 20, 100)


def quorum_map() -> QuorumMap:
    settings = parse_config(
        {
            "cluster": {"bootstrap_servers": ["broker-1.invalid:9092"]},
            "listeners": {"advertised_host": KPROXY_HOST, "broker_port_base": 0},
            "quorum": {
                "controllers": {
                    str(n): {"port": p, "address": f"controller-{n}.invalid:9093"}
                    for n, p in CONTROLLER_PORTS.items()
                }
            },
        }
    )
    quorum = QuorumMap(settings.quorum, KPROXY_HOST, settings.cluster.dial_address)
    for node_id, port in CONTROLLER_PORTS.items():
        quorum.listener_bound(node_id, port)
    return quorum


def describe_quorum_request(corr: int) -> bytes:
    topic = RequestTopic(
        topic_name=TopicName("__cluster_metadata"),
        partitions=(RequestPartition(partition_index=i32(0)),),
    )
    return encode_request_frame(DescribeQuorumRequest(topics=(topic,)), corr, "admin")


def describe_quorum_response(corr: int, nodes: dict[int, tuple[str, int]]) -> bytes:
    partition = PartitionData(
        partition_index=i32(0),
        error_code=ErrorCode.none,
        error_message=None,
        leader_id=BrokerId(2),
        leader_epoch=i32(7),
        high_watermark=i64(100),
        current_voters=(),
        observers=(),
    )
    msg = DescribeQuorumResponse(
        error_code=ErrorCode.none,
        error_message=None,
        topics=(TopicData(topic_name=TopicName("__cluster_metadata"), partitions=(partition,)),),
        nodes=tuple(
            Node(
                node_id=BrokerId(n),
                listeners=(Listener(name="CONTROLLER", host=host, port=u16(port)),),
            )
            for n, (host, port) in nodes.items()
        ),
    )
    return encode_response_frame(msg, corr)


def told(frame: bytes) -> dict[int, list[tuple[str, int]]]:
    _, msg = decode_response_frame(DescribeQuorumResponse, frame)
    return {int(n.node_id): [(li.host, int(li.port)) for li in n.listeners] for n in msg.nodes}


def test_a_controller_port_tells_each_controller_as_its_kproxy_port() -> None:
    quorum = quorum_map()
    s = ProxySession(quorum, LIMITS, frozenset(), None, quorum)
    client(s, describe_quorum_request(5))
    # The controllers advertise kproxy's ports already; the listener of a controller
    # kproxy does not carry (9) is removed, whatever it advertises.
    step = upstream(
        s,
        describe_quorum_response(
            5,
            {
                1: (KPROXY_HOST, 29001),
                2: ("controller-2.invalid", 9093),
                9: ("controller-9.invalid", 9093),
            },
        ),
    )
    assert told(joined(step.to_client)) == {
        1: [(KPROXY_HOST, 29001)],
        2: [(KPROXY_HOST, 29002)],
        9: [],
    }
    assert step.unmapped == [9]
    assert step.learned == [] and step.nodes_needing_listeners == []


def update_raft_voter(corr: int, host: str, port: int) -> bytes:
    msg = UpdateRaftVoterRequest(
        cluster_id="c",
        current_leader_epoch=i32(7),
        voter_id=i32(2),
        voter_directory_id=uuid.uuid4(),
        listeners=(VoterListener(name="CONTROLLER", host=host, port=u16(port)),),
        k_raft_version_feature=KRaftVersionFeature(
            min_supported_version=i16(0), max_supported_version=i16(1)
        ),
    )
    return encode_request_frame(msg, corr, "raft-client-2")


def test_a_controller_port_passes_what_a_controller_says_of_itself_untouched() -> None:
    """A controller sends UpdateRaftVoter whenever the stored endpoints differ from its own
    advertised ones (VoterSet.voterNodeNeedsUpdate): any rewrite would loop forever. The
    controller plane is served, not refused."""
    quorum = quorum_map()
    s = ProxySession(quorum, LIMITS, frozenset(), None, quorum)
    request = update_raft_voter(3, KPROXY_HOST, 29002)
    step = client(s, request)
    assert step.close is None
    assert joined(step.to_upstream) == request


def test_a_client_port_maps_controller_endpoints_by_controller() -> None:
    """DescribeQuorum through a broker: the controllers are told as their kproxy ports,
    not as the node ports of brokers with the same ids, and the broker map learns
    nothing from them."""
    brokers = address_map(open_nodes=(1, 2))
    quorum = quorum_map()
    s = ProxySession(brokers, LIMITS, CLIENT_REFUSED_APIS, None, quorum)
    client(s, describe_quorum_request(8))
    step = upstream(s, describe_quorum_response(8, {1: (KPROXY_HOST, 29001), 3: ("x", 1)}))
    assert told(joined(step.to_client)) == {1: [(KPROXY_HOST, 29001)], 3: [(KPROXY_HOST, 29003)]}
    assert step.learned == [] and brokers.advertised == {}


def test_without_a_quorum_a_client_port_keeps_mapping_by_node() -> None:
    brokers = address_map(open_nodes=(1,))
    s = ProxySession(brokers, LIMITS, CLIENT_REFUSED_APIS)
    client(s, describe_quorum_request(8))
    step = upstream(s, describe_quorum_response(8, {1: ("controller-1.invalid", 9093)}))
    assert told(joined(step.to_client)) == {1: [(KPROXY_HOST, 19001)]}


def test_a_client_port_still_refuses_the_controller_plane() -> None:
    quorum = quorum_map()
    s = ProxySession(address_map(), LIMITS, CLIENT_REFUSED_APIS, None, quorum)
    step = client(s, update_raft_voter(3, KPROXY_HOST, 29002))
    assert step.close is not None and step.close.reason == "api_not_allowed"


def test_the_quorum_map_dials_the_configured_address_through_the_overrides() -> None:
    quorum = quorum_map()
    assert quorum.dial_target(2) == ("controller-2.invalid", 9093, "controller-2.invalid")
    quorum.configure(lambda host, port: ("127.0.0.1", port + 1))
    assert quorum.dial_target(2) == ("127.0.0.1", 9094, "controller-2.invalid")
    assert quorum.dial_target(9) is None
    assert quorum.cluster_address(KPROXY_HOST, 29001) == (KPROXY_HOST, 29001)
