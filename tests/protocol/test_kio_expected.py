"""Smoke tests for tests/kio_expected.py (the kio-based oracle of endpoints and leaders):
which broker endpoints and leader hints it finds in hand-built kio messages of every
kind that carries them, and a message with its endpoints replaced.
"""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.errors import ErrorCode

from tests.kio_expected import (
    ExpectedEndpoint,
    ExpectedLeader,
    expected_endpoints,
    expected_leaders,
    replace_endpoints,
)
from tests.kio_support import decode_body, encode_body, sample_metadata_v12

ZERO = datetime.timedelta(0)


def test_metadata_v12_brokers_and_leaders() -> None:
    msg = sample_metadata_v12()
    assert expected_endpoints(msg) == [
        ExpectedEndpoint("brokers[]", 1, None, "b1.internal", 9092, "r1"),
        ExpectedEndpoint("brokers[]", 2, None, "b2.internal", 9093, None),
    ]
    topic_id = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert expected_leaders(msg) == [
        ExpectedLeader("t", topic_id, 0, 0, 2, 5, False),
        ExpectedLeader("t", topic_id, 1, 5, -1, 7, False),
    ]
    # The same after a trip through the wire.
    decoded = decode_body(type(msg), encode_body(msg))
    assert expected_endpoints(decoded) == expected_endpoints(msg)


def test_replace_endpoints_metadata() -> None:
    msg = sample_metadata_v12()
    new = replace_endpoints(msg, lambda e: ("proxy", 20000 + (e.node_id or 0)))
    assert [(e.host, e.port, e.node_id, e.rack) for e in expected_endpoints(new)] == [
        ("proxy", 20001, 1, "r1"),
        ("proxy", 20002, 2, None),
    ]
    assert new.topics == msg.topics  # type: ignore[attr-defined]
    assert msg.brokers[0].host == "b1.internal"  # type: ignore[attr-defined]  # unchanged
    with pytest.raises(ValueError, match="does not fit"):
        replace_endpoints(msg, lambda e: ("proxy", 2**31))


def test_find_coordinator_top_level_and_batched() -> None:
    from kio.schema.find_coordinator.v3.response import FindCoordinatorResponse as V3
    from kio.schema.find_coordinator.v4.response import Coordinator
    from kio.schema.find_coordinator.v4.response import FindCoordinatorResponse as V4

    v3 = V3(
        throttle_time=ZERO,
        error_code=ErrorCode.none,
        error_message=None,
        node_id=3,
        host="h",
        port=1,
    )
    assert expected_endpoints(v3) == [ExpectedEndpoint("", 3, None, "h", 1, None)]
    assert expected_endpoints(replace_endpoints(v3, lambda e: ("p", 2))) == [
        ExpectedEndpoint("", 3, None, "p", 2, None)
    ]
    v4 = V4(
        throttle_time=ZERO,
        coordinators=(
            Coordinator(
                key="g", node_id=4, host="h4", port=4, error_code=ErrorCode.none, error_message=None
            ),
        ),
    )
    assert expected_endpoints(v4) == [ExpectedEndpoint("coordinators[]", 4, None, "h4", 4, None)]


def test_describe_quorum_nested_listeners_use_enclosing_node_id() -> None:
    from kio.schema.describe_quorum.v2.response import DescribeQuorumResponse, Listener, Node

    msg = DescribeQuorumResponse(
        error_code=ErrorCode.none,
        error_message=None,
        topics=(),
        nodes=(
            Node(node_id=7, listeners=(Listener(name="CONTROLLER", host="c7", port=9093),)),
            Node(node_id=8, listeners=(Listener(name="CONTROLLER", host="c8", port=9094),)),
        ),
    )
    assert expected_endpoints(msg) == [
        ExpectedEndpoint("nodes[].listeners[]", 7, "CONTROLLER", "c7", 9093, None),
        ExpectedEndpoint("nodes[].listeners[]", 8, "CONTROLLER", "c8", 9094, None),
    ]


def test_update_raft_voter_response_current_leader() -> None:
    from kio.schema.update_raft_voter.v0.response import CurrentLeader, UpdateRaftVoterResponse

    msg = UpdateRaftVoterResponse(
        throttle_time=ZERO,
        error_code=ErrorCode.none,
        current_leader=CurrentLeader(leader_id=2, leader_epoch=9, host="c2", port=9093),
    )
    assert expected_endpoints(msg) == [
        ExpectedEndpoint("current_leader", 2, None, "c2", 9093, None)
    ]
    assert expected_leaders(msg) == []  # no partition index at that level


def test_leader_endpoints_have_no_node_id() -> None:
    from kio.schema.begin_quorum_epoch.v1.request import (
        BeginQuorumEpochRequest,
        LeaderEndpoint,
        PartitionData,
        TopicData,
    )

    msg = BeginQuorumEpochRequest(
        cluster_id="c",
        voter_id=5,  # the receiving voter, not the endpoint owner
        topics=(
            TopicData(
                topic_name="__cluster_metadata",
                partitions=(
                    PartitionData(
                        partition_index=0, voter_directory_id=None, leader_id=1, leader_epoch=3
                    ),
                ),
            ),
        ),
        leader_endpoints=(LeaderEndpoint(name="CONTROLLER", host="c1", port=9093),),
    )
    assert expected_endpoints(msg) == [
        ExpectedEndpoint("leader_endpoints[]", None, "CONTROLLER", "c1", 9093, None)
    ]
    assert expected_leaders(msg) == [
        ExpectedLeader("__cluster_metadata", None, 0, None, 1, 3, False)
    ]


def test_broker_registration_listeners_use_broker_id() -> None:
    from kio.schema.broker_registration.v4.request import BrokerRegistrationRequest, Listener

    msg = BrokerRegistrationRequest(
        broker_id=11,
        cluster_id="c",
        incarnation_id=uuid.uuid4(),
        listeners=(
            Listener(name="PLAINTEXT", host="b11", port=9092, security_protocol=0),
            Listener(name="SSL", host="b11", port=9093, security_protocol=1),
        ),
        features=(),
        rack="r",
        is_migrating_zk_broker=False,
        log_dirs=(),
        previous_broker_epoch=-1,
    )
    assert expected_endpoints(msg) == [
        ExpectedEndpoint("listeners[]", 11, "PLAINTEXT", "b11", 9092, None),
        ExpectedEndpoint("listeners[]", 11, "SSL", "b11", 9093, None),
    ]
    with pytest.raises(ValueError, match="does not fit"):
        replace_endpoints(msg, lambda e: ("x", 65536))  # uint16 port


def test_streams_user_endpoints_are_not_broker_endpoints() -> None:
    from kio.schema.streams_group_heartbeat.v0.response import (
        Endpoint,
        EndpointToPartitions,
        StreamsGroupHeartbeatResponse,
    )

    msg = StreamsGroupHeartbeatResponse(
        throttle_time=ZERO,
        error_code=ErrorCode.none,
        member_id="m",
        member_epoch=1,
        heartbeat_interval=ZERO,
        acceptable_recovery_lag=0,
        task_offset_interval=ZERO,
        status=None,
        active_tasks=None,
        standby_tasks=None,
        warmup_tasks=None,
        endpoint_information_epoch=1,
        partitions_by_user_endpoint=(
            EndpointToPartitions(
                user_endpoint=Endpoint(host="app1", port=8080),
                active_partitions=(),
                standby_partitions=(),
            ),
        ),
    )
    assert expected_endpoints(msg) == []
    assert replace_endpoints(msg, lambda e: ("x", 1)) == msg


# --------------------------------------------------------------------------- leaders


def test_produce_current_leader_is_a_hint() -> None:
    from kio.schema.produce.v10.response import (
        LeaderIdAndEpoch,
        NodeEndpoint,
        PartitionProduceResponse,
        ProduceResponse,
        TopicProduceResponse,
    )

    def part(index: int, error: ErrorCode, leader: LeaderIdAndEpoch) -> PartitionProduceResponse:
        return PartitionProduceResponse(
            index=index,
            error_code=error,
            base_offset=-1,
            record_errors=(),
            current_leader=leader,
        )

    msg = ProduceResponse(
        responses=(
            TopicProduceResponse(
                name="t",
                partition_responses=(
                    part(
                        0,
                        ErrorCode.not_leader_or_follower,
                        LeaderIdAndEpoch(leader_id=3, leader_epoch=12),
                    ),
                    part(1, ErrorCode.none, LeaderIdAndEpoch()),
                ),
            ),
        ),
        throttle_time=ZERO,
        node_endpoints=(NodeEndpoint(node_id=3, host="b3", port=9092, rack=None),),
    )
    assert expected_leaders(msg) == [
        ExpectedLeader("t", None, 0, 6, 3, 12, True),
        ExpectedLeader("t", None, 1, 0, -1, -1, True),  # default (-1, -1) still reported
    ]
    assert expected_endpoints(msg) == [
        ExpectedEndpoint("node_endpoints[]", 3, None, "b3", 9092, None)
    ]
    assert decode_body(ProduceResponse, encode_body(msg)) == msg
