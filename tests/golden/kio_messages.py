"""The golden vectors kio encodes (Kafka 4.x versions): each message written out as kio
objects, so that its original is kio's encoding of it and its rewrite kio's encoding of
the same objects with the fixed mapping applied.
"""

from __future__ import annotations

import datetime
import sys
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from tests.golden.vectors import RECORDS, TOPIC_ID, TOPIC_ID_2
from tests.kio_support import kio_message_class

E = ErrorCode
DIR_ID = uuid.UUID("11111111-2222-4333-8444-555555555555")
INCARNATION = uuid.UUID("aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee")
MS = datetime.timedelta(milliseconds=1)


def M(api_key: int, version: int, kind: str, **fields: Any) -> Any:
    """A kio message of (api_key, version, kind)."""
    cls = kio_message_class(api_key, version, kind)  # type: ignore[arg-type]
    assert cls is not None, (api_key, version, kind)
    return cls(**fields)


def S(api_key: int, version: int, kind: str, path: str, **fields: Any) -> Any:
    """A nested kio struct: `path` is the dotted attribute path of its class."""
    cls = kio_message_class(api_key, version, kind)  # type: ignore[arg-type]
    assert cls is not None
    module = sys.modules[cls.__module__]
    return getattr(module, path)(**fields)


def kio_vectors() -> dict[str, tuple[int, int, str, Any]]:
    """name -> (api_key, version, kind, kio message)."""
    out: dict[str, tuple[int, int, str, Any]] = {}

    def add(name: str, api_key: int, version: int, kind: str, msg: Any) -> None:
        out[name] = (api_key, version, kind, msg)

    # Metadata v1 (classic strings) and v12/v13 (compact, flexible).
    def metadata(v: int) -> Any:
        broker = "MetadataResponseBroker"
        topic = "MetadataResponseTopic"
        part = "MetadataResponsePartition"
        extra_topic: dict[str, Any] = {}
        extra_part: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        if v >= 10:
            extra_topic["topic_id"] = TOPIC_ID
        if v >= 8:
            extra_topic["topic_authorized_operations"] = -2147483648
        if v >= 7:
            extra_part["leader_epoch"] = 5
        if v >= 5:
            extra_part["offline_replicas"] = ()
        if v >= 3:
            extra["throttle_time"] = 0 * MS
        if v >= 2:
            extra["cluster_id"] = "golden-cluster"
        if v == 13:
            extra["error_code"] = E.none
        brokers = (
            S(3, v, "response", broker, node_id=1, host="broker-1.internal", port=9092, rack="r1"),
            S(3, v, "response", broker, node_id=2, host="broker-2.internal", port=9093, rack=None),
            S(3, v, "response", broker, node_id=99, host="broker-99.internal", port=9094,
              rack="r3"),
        )  # fmt: skip
        partitions = (
            S(3, v, "response", part, error_code=E.none, partition_index=0, leader_id=1,
              replica_nodes=(1, 2), isr_nodes=(1, 2), **extra_part),
            S(3, v, "response", part, error_code=E.leader_not_available, partition_index=1,
              leader_id=-1, replica_nodes=(2, 99), isr_nodes=(2,), **extra_part),
        )  # fmt: skip
        topics = (
            S(3, v, "response", topic, error_code=E.none, name="orders", is_internal=False,
              partitions=partitions, **extra_topic),
        )  # fmt: skip
        return M(3, v, "response", brokers=brokers, controller_id=2, topics=topics, **extra)

    add("metadata_v1_response", 3, 1, "response", metadata(1))
    add("metadata_v12_response", 3, 12, "response", metadata(12))
    add("metadata_v13_response", 3, 13, "response", metadata(13))

    # FindCoordinator v3 (top level, flexible) and v6 (Coordinators[]).
    add("find_coordinator_v3_response", 10, 3, "response", M(
        10, 3, "response", throttle_time=0 * MS, error_code=E.none, error_message=None,
        node_id=2, host="broker-2.internal", port=9093))  # fmt: skip
    add("find_coordinator_v6_response", 10, 6, "response", M(
        10, 6, "response", throttle_time=0 * MS, coordinators=(
            S(10, 6, "response", "Coordinator", key="group-a", node_id=1,
              host="broker-1.internal", port=9092, error_code=E.none, error_message=None),
            S(10, 6, "response", "Coordinator", key="txn-b", node_id=99,
              host="broker-99.internal", port=9094, error_code=E.none, error_message=None),
        )))  # fmt: skip

    # DescribeCluster v2.
    add("describe_cluster_v2_response", 60, 2, "response", M(
        60, 2, "response", throttle_time=0 * MS, error_code=E.none, error_message=None,
        endpoint_type=1, cluster_id="golden-cluster", controller_id=1, brokers=(
            S(60, 2, "response", "DescribeClusterBroker", broker_id=1, host="broker-1.internal",
              port=9092, rack="r1", is_fenced=False),
            S(60, 2, "response", "DescribeClusterBroker", broker_id=99,
              host="broker-99.internal", port=9094, rack=None, is_fenced=True),
        ), cluster_authorized_operations=-2147483648))  # fmt: skip

    # Produce v11 (KIP-951 tagged CurrentLeader + NodeEndpoints) and v13 (topic ids).
    def produce(v: int) -> Any:
        pr = "PartitionProduceResponse"
        leader = S(0, v, "response", "LeaderIdAndEpoch", leader_id=2, leader_epoch=8)
        parts = (
            S(0, v, "response", pr, index=0, error_code=E.none, base_offset=41,
              log_append_time=None, log_start_offset=0, record_errors=(), error_message=None),
            S(0, v, "response", pr, index=1, error_code=E.not_leader_or_follower,
              base_offset=-1, log_append_time=None, log_start_offset=-1, record_errors=(),
              error_message=None, current_leader=leader),
        )  # fmt: skip
        topic: dict[str, Any] = {"topic_id": TOPIC_ID} if v >= 13 else {"name": "orders"}
        return M(0, v, "response", responses=(
            S(0, v, "response", "TopicProduceResponse", partition_responses=parts, **topic),
        ), throttle_time=0 * MS, node_endpoints=(
            S(0, v, "response", "NodeEndpoint", node_id=2, host="broker-2.internal", port=9093,
              rack="r2"),
        ))  # fmt: skip

    add("produce_v11_response", 0, 11, "response", produce(11))
    add("produce_v13_response", 0, 13, "response", produce(13))

    # Fetch v12 (tagged CurrentLeader, no NodeEndpoints yet) and v16 (NodeEndpoints).
    def fetch(v: int) -> Any:
        pd = "PartitionData"
        parts = (
            S(1, v, "response", pd, partition_index=0, error_code=E.none, high_watermark=1,
              last_stable_offset=1, log_start_offset=0, aborted_transactions=None,
              preferred_read_replica=-1, records=RECORDS),
            S(1, v, "response", pd, partition_index=1, error_code=E.not_leader_or_follower,
              high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
              current_leader=S(1, v, "response", "LeaderIdAndEpoch", leader_id=3,
                               leader_epoch=4),
              aborted_transactions=None, preferred_read_replica=-1, records=None),
        )  # fmt: skip
        topic: dict[str, Any] = {"topic_id": TOPIC_ID} if v >= 13 else {"topic": "orders"}
        extra: dict[str, Any] = {}
        if v >= 16:
            extra["node_endpoints"] = (
                S(1, v, "response", "NodeEndpoint", node_id=3, host="broker-3.internal",
                  port=9095, rack=None),
                S(1, v, "response", "NodeEndpoint", node_id=99, host="broker-99.internal",
                  port=9094, rack="r3"),
            )  # fmt: skip
        return M(1, v, "response", throttle_time=0 * MS, error_code=E.none, session_id=0,
                 responses=(S(1, v, "response", "FetchableTopicResponse", partitions=parts,
                              **topic),), **extra)  # fmt: skip

    add("fetch_v12_response", 1, 12, "response", fetch(12))
    add("fetch_v16_response", 1, 16, "response", fetch(16))

    # ShareFetch v1 / ShareAcknowledge v2 (KIP-932, untagged).
    add("share_fetch_v1_response", 78, 1, "response", M(
        78, 1, "response", throttle_time=0 * MS, error_code=E.none, error_message=None,
        acquisition_lock_timeout=30000 * MS, responses=(
            S(78, 1, "response", "ShareFetchableTopicResponse", topic_id=TOPIC_ID, partitions=(
                S(78, 1, "response", "PartitionData", partition_index=0,
                  error_code=E.not_leader_or_follower, error_message=None,
                  acknowledge_error_code=0, acknowledge_error_message=None,
                  current_leader=S(78, 1, "response", "LeaderIdAndEpoch", leader_id=2,
                                   leader_epoch=9),
                  records=b"", acquired_records=()),
            )),
        ), node_endpoints=(
            S(78, 1, "response", "NodeEndpoint", node_id=2, host="broker-2.internal",
              port=9093, rack="r2"),
        )))  # fmt: skip
    add("share_acknowledge_v2_response", 79, 2, "response", M(
        79, 2, "response", throttle_time=0 * MS, error_code=E.none, error_message=None,
        acquisition_lock_timeout=30000 * MS, responses=(
            S(79, 2, "response", "ShareAcknowledgeTopicResponse", topic_id=TOPIC_ID, partitions=(
                S(79, 2, "response", "PartitionData", partition_index=3,
                  error_code=E.fenced_leader_epoch, error_message=None,
                  current_leader=S(79, 2, "response", "LeaderIdAndEpoch", leader_id=99,
                                   leader_epoch=10)),
            )),
        ), node_endpoints=(
            S(79, 2, "response", "NodeEndpoint", node_id=99, host="broker-99.internal",
              port=9094, rack=None),
            S(79, 2, "response", "NodeEndpoint", node_id=1, host="broker-1.internal",
              port=9092, rack="r1"),
        )))  # fmt: skip

    # KRaft quorum responses: NodeEndpoints tagged, uint16 ports.
    def kraft_topics(api_key: int, v: int, **partition: Any) -> tuple[Any, ...]:
        return (
            S(api_key, v, "response", "TopicData", topic_name="__cluster_metadata", partitions=(
                S(api_key, v, "response", "PartitionData", partition_index=0,
                  error_code=E.none, leader_id=3001, leader_epoch=12, **partition),
            )),
        )  # fmt: skip

    def kraft_endpoints(api_key: int, v: int) -> tuple[Any, ...]:
        return (
            S(api_key, v, "response", "NodeEndpoint", node_id=3001,
              host="controller-1.internal", port=9097),
            S(api_key, v, "response", "NodeEndpoint", node_id=99,
              host="controller-99.internal", port=9098),
        )  # fmt: skip

    add("vote_v2_response", 52, 2, "response", M(
        52, 2, "response", error_code=E.none, topics=kraft_topics(52, 2, vote_granted=True),
        node_endpoints=kraft_endpoints(52, 2)))  # fmt: skip
    add("begin_quorum_epoch_v1_response", 53, 1, "response", M(
        53, 1, "response", error_code=E.none, topics=kraft_topics(53, 1),
        node_endpoints=kraft_endpoints(53, 1)))  # fmt: skip
    add("end_quorum_epoch_v1_response", 54, 1, "response", M(
        54, 1, "response", error_code=E.none, topics=kraft_topics(54, 1),
        node_endpoints=kraft_endpoints(54, 1)))  # fmt: skip
    add("fetch_snapshot_v1_response", 59, 1, "response", M(
        59, 1, "response", throttle_time=0 * MS, error_code=E.none, topics=(
            S(59, 1, "response", "TopicSnapshot", name="__cluster_metadata", partitions=(
                S(59, 1, "response", "PartitionSnapshot", index=0, error_code=E.none,
                  snapshot_id=S(59, 1, "response", "SnapshotId", end_offset=100, epoch=12),
                  current_leader=S(59, 1, "response", "LeaderIdAndEpoch", leader_id=3001,
                                   leader_epoch=12),
                  size=4, position=0, unaligned_records=b"\x01\x02\x03\x04"),
            )),
        ), node_endpoints=kraft_endpoints(59, 1)))  # fmt: skip

    # DescribeQuorum v2: Nodes[].Listeners[] (listener-named, uint16).
    voter = "ReplicaState"
    add("describe_quorum_v2_response", 55, 2, "response", M(
        55, 2, "response", error_code=E.none, error_message=None, topics=(
            S(55, 2, "response", "TopicData", topic_name="__cluster_metadata", partitions=(
                S(55, 2, "response", "PartitionData", partition_index=0, error_code=E.none,
                  error_message=None, leader_id=3001, leader_epoch=12, high_watermark=100,
                  current_voters=(
                      S(55, 2, "response", voter, replica_id=3001,
                        replica_directory_id=DIR_ID, log_end_offset=100,
                        last_fetch_timestamp=-1, last_caught_up_timestamp=-1),
                  ), observers=()),
            )),
        ), nodes=(
            S(55, 2, "response", "Node", node_id=3001, listeners=(
                S(55, 2, "response", "Listener", name="CONTROLLER",
                  host="controller-1.internal", port=9097),
                S(55, 2, "response", "Listener", name="CONTROLLER_SSL",
                  host="controller-1.internal", port=9197),
            )),
            S(55, 2, "response", "Node", node_id=99, listeners=(
                S(55, 2, "response", "Listener", name="CONTROLLER",
                  host="controller-99.internal", port=9098),
            )),
        )))  # fmt: skip

    # UpdateRaftVoter response: tagged CurrentLeader with host and an int32 port.
    add("update_raft_voter_v0_response", 82, 0, "response", M(
        82, 0, "response", throttle_time=0 * MS, error_code=E.none,
        current_leader=S(82, 0, "response", "CurrentLeader", leader_id=3001, leader_epoch=12,
                         host="controller-1.internal", port=9097)))  # fmt: skip

    # Leadership only.
    add("list_offsets_v11_response", 2, 11, "response", M(
        2, 11, "response", throttle_time=0 * MS, topics=(
            S(2, 11, "response", "ListOffsetsTopicResponse", name="orders", partitions=(
                S(2, 11, "response", "ListOffsetsPartitionResponse", partition_index=0,
                  error_code=E.none, timestamp=-1, offset=42, leader_epoch=5),
            )),
        )))  # fmt: skip
    add("offset_for_leader_epoch_v4_response", 23, 4, "response", M(
        23, 4, "response", throttle_time=0 * MS, topics=(
            S(23, 4, "response", "OffsetForLeaderTopicResult", topic="orders", partitions=(
                S(23, 4, "response", "EpochEndOffset", error_code=E.none, partition=1,
                  leader_epoch=7, end_offset=40),
            )),
        )))  # fmt: skip
    add("describe_topic_partitions_v0_response", 75, 0, "response", M(
        75, 0, "response", throttle_time=0 * MS, topics=(
            S(75, 0, "response", "DescribeTopicPartitionsResponseTopic", error_code=E.none,
              name="orders", topic_id=TOPIC_ID, is_internal=False, partitions=(
                S(75, 0, "response", "DescribeTopicPartitionsResponsePartition",
                  error_code=E.none, partition_index=0, leader_id=1, leader_epoch=5,
                  replica_nodes=(1, 2), isr_nodes=(1, 2), eligible_leader_replicas=None,
                  last_known_elr=None, offline_replicas=()),
              ), topic_authorized_operations=-2147483648),
        ), next_cursor=None))  # fmt: skip
    add("alter_partition_v3_response", 56, 3, "response", M(
        56, 3, "response", throttle_time=0 * MS, error_code=E.none, topics=(
            S(56, 3, "response", "TopicData", topic_id=TOPIC_ID_2, partitions=(
                S(56, 3, "response", "PartitionData", partition_index=2, error_code=E.none,
                  leader_id=2, leader_epoch=6, isr=(2, 3), leader_recovery_state=0,
                  partition_epoch=14),
            )),
        )))  # fmt: skip

    # KRaft / registration requests: listener-named endpoints, uint16 ports.
    def leader_endpoints(api_key: int) -> tuple[Any, ...]:
        return (
            S(api_key, 1, "request", "LeaderEndpoint", name="CONTROLLER",
              host="controller-1.internal", port=9097),
        )  # fmt: skip

    add("begin_quorum_epoch_v1_request", 53, 1, "request", M(
        53, 1, "request", cluster_id="golden-cluster", voter_id=3002, topics=(
            S(53, 1, "request", "TopicData", topic_name="__cluster_metadata", partitions=(
                S(53, 1, "request", "PartitionData", partition_index=0,
                  voter_directory_id=DIR_ID, leader_id=3001, leader_epoch=12),
            )),
        ), leader_endpoints=leader_endpoints(53)))  # fmt: skip
    add("end_quorum_epoch_v1_request", 54, 1, "request", M(
        54, 1, "request", cluster_id="golden-cluster", topics=(
            S(54, 1, "request", "TopicData", topic_name="__cluster_metadata", partitions=(
                S(54, 1, "request", "PartitionData", partition_index=0, leader_id=3001,
                  leader_epoch=12, preferred_candidates=(
                      S(54, 1, "request", "ReplicaInfo", candidate_id=3002,
                        candidate_directory_id=DIR_ID),
                  )),
            )),
        ), leader_endpoints=leader_endpoints(54)))  # fmt: skip
    add("add_raft_voter_v1_request", 80, 1, "request", M(
        80, 1, "request", cluster_id="golden-cluster", timeout=30000 * MS, voter_id=3003,
        voter_directory_id=DIR_ID, listeners=(
            S(80, 1, "request", "Listener", name="CONTROLLER", host="controller-3.internal",
              port=9099),
        ), ack_when_committed=True))  # fmt: skip
    add("update_raft_voter_v0_request", 82, 0, "request", M(
        82, 0, "request", cluster_id="golden-cluster", current_leader_epoch=12, voter_id=3002,
        voter_directory_id=DIR_ID, listeners=(
            S(82, 0, "request", "Listener", name="CONTROLLER", host="controller-2.internal",
              port=9096),
        ), k_raft_version_feature=S(82, 0, "request", "KRaftVersionFeature",
                                    min_supported_version=0, max_supported_version=1)))  # fmt: skip
    add("broker_registration_v4_request", 62, 4, "request", M(
        62, 4, "request", broker_id=1, cluster_id="golden-cluster", incarnation_id=INCARNATION,
        listeners=(
            S(62, 4, "request", "Listener", name="PLAINTEXT", host="broker-1.internal",
              port=9092, security_protocol=0),
            S(62, 4, "request", "Listener", name="SSL", host="broker-1.internal", port=9192,
              security_protocol=1),
        ), features=(
            S(62, 4, "request", "Feature", name="metadata.version", min_supported_version=7,
              max_supported_version=27),
        ), rack="r1", is_migrating_zk_broker=False, log_dirs=(DIR_ID,),
        previous_broker_epoch=-1))  # fmt: skip
    add("controller_registration_v0_request", 70, 0, "request", M(
        70, 0, "request", controller_id=99, incarnation_id=INCARNATION, zk_migration_ready=False,
        listeners=(
            S(70, 0, "request", "Listener", name="CONTROLLER", host="controller-99.internal",
              port=9098, security_protocol=0),
        ), features=()))  # fmt: skip
    return out
