"""What a :class:`~tests.scripted_broker.ScriptedBroker` answers by default, encoded by
kio: ApiVersions, Metadata, FindCoordinator, DescribeCluster, the KRaft quorum RPCs
(KIP-595, KIP-853) and the share-group RPCs (KIP-932), each built from the scripted
cluster's nodes with :func:`tests.kio_build.build`."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from tests.kio_build import Sub, build
from tests.kio_support import (
    API_VERSIONS_KEY,
    kio_message_class,
    kio_versions,
)

METADATA_TOPIC = "__cluster_metadata"
CLIENT_LISTENER = "CLIENT"
CONTROLLER_LISTENER = "CONTROLLER"
SHARE_TOPIC = "kraft-share"
SHARE_TOPIC_ID = uuid.UUID("5ca1ab1e-0000-4000-8000-00000000cafe")
UNSUPPORTED_VERSION = 35

Handler = Callable[[int, Any], Any]
"""``fn(version, request) -> kio response`` (or None: no answer at all)."""


@dataclasses.dataclass(frozen=True)
class ScriptedNode:
    """One node of the scripted cluster, as the cluster advertises it."""

    node_id: int
    host: str  # advertised host (never resolvable: *.invalid)
    port: int  # the client listener's port (int32 fields: Metadata, DescribeCluster...)
    controller_port: int  # the CONTROLLER listener's port (uint16 fields: KRaft)
    rack: str | None

    @property
    def advertised(self) -> str:
        return f"{self.host}:{self.port}"


def _many(make_one: Callable[[type, Any], Any], items: Any) -> Sub:
    return Sub(lambda c: tuple(make_one(c, item) for item in items))


class ScriptedAnswers:
    """The default handlers of :class:`~tests.scripted_broker.ScriptedBroker` (its base
    class), answering from its nodes, leader and cluster id."""

    nodes: dict[int, ScriptedNode]
    cluster_id: str
    leader_id: int
    leader_epoch: int
    handlers: dict[int, Handler]

    def default_handlers(self) -> dict[int, Handler]:
        return {
            API_VERSIONS_KEY: self.api_versions,
            3: self.metadata,
            10: self.find_coordinator,
            52: self.vote,
            53: self.quorum_epoch,
            54: self.quorum_epoch,
            55: self.describe_quorum,
            59: self.fetch_snapshot,
            60: self.describe_cluster,
            78: self.share_fetch,
            79: self.share_acknowledge,
            80: self.raft_voter_change,
            81: self.raft_voter_change,
            82: self.update_raft_voter,
        }

    @staticmethod
    def _response_class(api_key: int, version: int) -> type:
        cls = kio_message_class(api_key, version, "response")
        if cls is None:
            raise LookupError(f"kio has no response class for api key {api_key} v{version}")
        return cls

    def api_versions_response(self, version: int, error: ErrorCode = ErrorCode.none) -> Any:
        """Every key the scripted broker answers, with the versions kio has for it."""
        keys = sorted(self.handlers)
        ranges = [(k, kio_versions(k, "response")) for k in keys]
        return build(
            self._response_class(API_VERSIONS_KEY, version),
            error_code=error,
            api_keys=_many(
                lambda c, kr: build(c, api_key=kr[0], min_version=kr[1][0], max_version=kr[1][-1]),
                [(k, r) for k, r in ranges if len(r)],
            ),
            throttle_time=datetime.timedelta(0),
        )

    def api_versions(self, version: int, request: Any) -> Any:
        return self.api_versions_response(version)

    def _partition_leader(self, partition: int) -> ScriptedNode:
        ids = list(self.nodes)
        return self.nodes[ids[partition % len(ids)]]

    def metadata(self, version: int, request: Any) -> Any:
        ids = tuple(self.nodes)
        wanted = None if request.topics is None else [t.name for t in request.topics]

        def topic(c: type, name: str | None) -> Any:
            known = name in (None, SHARE_TOPIC)
            return build(
                c,
                error_code=ErrorCode.none if known else ErrorCode.unknown_topic_or_partition,
                name=SHARE_TOPIC if name is None else name,
                topic_id=SHARE_TOPIC_ID if known else None,
                is_internal=False,
                partitions=_many(partition, range(3) if known else ()),
                topic_authorized_operations=-(2**31),
            )

        def partition(c: type, index: int) -> Any:
            return build(
                c,
                error_code=ErrorCode.none,
                partition_index=index,
                leader_id=self._partition_leader(index).node_id,
                leader_epoch=self.leader_epoch,
                replica_nodes=ids,
                isr_nodes=ids,
                offline_replicas=(),
            )

        return build(
            self._response_class(3, version),
            throttle_time=datetime.timedelta(0),
            brokers=_many(
                lambda c, n: build(c, node_id=n.node_id, host=n.host, port=n.port, rack=n.rack),
                self.nodes.values(),
            ),
            cluster_id=self.cluster_id,
            controller_id=self.leader_id,
            topics=_many(topic, [None] if wanted is None else wanted),
            cluster_authorized_operations=-(2**31),
            error_code=ErrorCode.none,
        )

    def _coordinator(self, key: str) -> ScriptedNode:
        return self._partition_leader(sum(key.encode()))

    def find_coordinator(self, version: int, request: Any) -> Any:
        cls = self._response_class(10, version)
        if version < 4:
            node = self._coordinator(request.key)
            return build(
                cls,
                throttle_time=datetime.timedelta(0),
                error_code=ErrorCode.none,
                error_message=None,
                node_id=node.node_id,
                host=node.host,
                port=node.port,
            )

        def coordinator(c: type, key: str) -> Any:
            node = self._coordinator(key)
            return build(
                c,
                key=key,
                node_id=node.node_id,
                host=node.host,
                port=node.port,
                error_code=ErrorCode.none,
                error_message=None,
            )

        return build(
            cls,
            throttle_time=datetime.timedelta(0),
            coordinators=_many(coordinator, request.coordinator_keys),
        )

    def describe_cluster(self, version: int, request: Any) -> Any:
        return build(
            self._response_class(60, version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            error_message=None,
            endpoint_type=getattr(request, "endpoint_type", 1),
            cluster_id=self.cluster_id,
            controller_id=self.leader_id,
            brokers=_many(
                lambda c, n: build(
                    c, broker_id=n.node_id, host=n.host, port=n.port, rack=n.rack, is_fenced=False
                ),
                self.nodes.values(),
            ),
            cluster_authorized_operations=-(2**31),
        )

    # KRaft: every voter's CONTROLLER endpoint (uint16 ports).
    def _node_endpoints(self) -> Sub:
        return _many(
            lambda c, n: build(c, node_id=n.node_id, host=n.host, port=n.controller_port),
            self.nodes.values(),
        )

    def _quorum_topics(self, **partition_values: Any) -> Sub:
        def partition(c: type, index: int) -> Any:
            return build(
                c,
                partition_index=index,
                error_code=ErrorCode.none,
                leader_id=self.leader_id,
                leader_epoch=self.leader_epoch,
                **partition_values,
            )

        return _many(
            lambda c, name: build(c, topic_name=name, partitions=_many(partition, [0])),
            [METADATA_TOPIC],
        )

    def vote(self, version: int, request: Any) -> Any:
        return build(
            self._response_class(52, version),
            error_code=ErrorCode.none,
            topics=self._quorum_topics(vote_granted=False),
            node_endpoints=self._node_endpoints(),
        )

    def quorum_epoch(self, version: int, request: Any) -> Any:
        """BeginQuorumEpoch and EndQuorumEpoch answers have the same shape."""
        return build(
            self._response_class(type(request).__api_key__, version),
            error_code=ErrorCode.none,
            topics=self._quorum_topics(),
            node_endpoints=self._node_endpoints(),
        )

    def fetch_snapshot(self, version: int, request: Any) -> Any:
        def partition(c: type, index: int) -> Any:
            return build(
                c,
                index=index,
                error_code=ErrorCode.none,
                snapshot_id=Sub(lambda s: build(s, end_offset=4242, epoch=self.leader_epoch)),
                current_leader=Sub(
                    lambda s: build(s, leader_id=self.leader_id, leader_epoch=self.leader_epoch)
                ),
                size=17,
                position=0,
                unaligned_records=b"scripted-snapshot",
            )

        return build(
            self._response_class(59, version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            topics=_many(
                lambda c, name: build(c, name=name, partitions=_many(partition, [0])),
                [METADATA_TOPIC],
            ),
            node_endpoints=self._node_endpoints(),
        )

    def describe_quorum(self, version: int, request: Any) -> Any:
        def replica(c: type, node_id: int) -> Any:
            return build(
                c,
                replica_id=node_id,
                replica_directory_id=uuid.UUID(int=0xD1 << 64 | node_id),
                log_end_offset=1000 + node_id,
                last_fetch_timestamp=1_700_000_000_000 + node_id,
                last_caught_up_timestamp=1_700_000_000_000,
            )

        def partition(c: type, index: int) -> Any:
            return build(
                c,
                partition_index=index,
                error_code=ErrorCode.none,
                error_message=None,
                leader_id=self.leader_id,
                leader_epoch=self.leader_epoch,
                high_watermark=999,
                current_voters=_many(replica, list(self.nodes)),
                observers=_many(replica, [max(self.nodes) + 100]),
            )

        def node(c: type, n: ScriptedNode) -> Any:
            return build(
                c,
                node_id=n.node_id,
                listeners=_many(
                    lambda lc, lst: build(lc, name=lst[0], host=n.host, port=lst[1]),
                    [
                        (CONTROLLER_LISTENER, n.controller_port),
                        ("CONTROLLER_SSL", n.controller_port + 1),
                    ],
                ),
            )

        return build(
            self._response_class(55, version),
            error_code=ErrorCode.none,
            error_message=None,
            topics=_many(
                lambda c, name: build(c, topic_name=name, partitions=_many(partition, [0])),
                [METADATA_TOPIC],
            ),
            nodes=_many(node, self.nodes.values()),
        )

    def update_raft_voter(self, version: int, request: Any) -> Any:
        leader = self.nodes[self.leader_id]
        return build(
            self._response_class(82, version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            current_leader=Sub(
                lambda c: build(
                    c,
                    leader_id=leader.node_id,
                    leader_epoch=self.leader_epoch,
                    host=leader.host,
                    port=leader.controller_port,
                )
            ),
        )

    def raft_voter_change(self, version: int, request: Any) -> Any:
        """AddRaftVoter / RemoveRaftVoter: error fields only."""
        return build(
            self._response_class(type(request).__api_key__, version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            error_message=None,
        )

    def _share_topics(self, request: Any) -> Sub:
        """Every requested share partition answers NOT_LEADER_OR_FOLLOWER with a hint."""
        wanted = [(t.topic_id, [p.partition_index for p in t.partitions]) for t in request.topics]
        if not wanted:
            wanted = [(SHARE_TOPIC_ID, [0])]

        def partition(c: type, index: int) -> Any:
            leader = self._partition_leader(index + 1)
            return build(
                c,
                partition_index=index,
                error_code=ErrorCode.not_leader_or_follower,
                error_message="moved",
                acknowledge_error_code=0,
                acknowledge_error_message=None,
                current_leader=Sub(
                    lambda s: build(s, leader_id=leader.node_id, leader_epoch=self.leader_epoch)
                ),
                records=b"",
                acquired_records=(),
            )

        return _many(
            lambda c, tp: build(c, topic_id=tp[0], partitions=_many(partition, tp[1])), wanted
        )

    def _share_endpoints(self) -> Sub:
        return _many(
            lambda c, n: build(c, node_id=n.node_id, host=n.host, port=n.port, rack=n.rack),
            self.nodes.values(),
        )

    def _share_response(self, api_key: int, version: int, request: Any) -> Any:
        """ShareFetch and ShareAcknowledge answers have the same shape (KIP-932)."""
        return build(
            self._response_class(api_key, version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            error_message=None,
            acquisition_lock_timeout=datetime.timedelta(seconds=30),
            responses=self._share_topics(request),
            node_endpoints=self._share_endpoints(),
        )

    def share_fetch(self, version: int, request: Any) -> Any:
        return self._share_response(78, version, request)

    def share_acknowledge(self, version: int, request: Any) -> Any:
        return self._share_response(79, version, request)
