"""The KRaft and share-group messages kproxy is checked on (issue 3): every (api key,
version) whose response is compared with the scripted cluster's answer, the requests
that carry endpoints, and a sample request for each.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from hypothesis import HealthCheck, settings

from tests.kio_build import Sub, build
from tests.kio_support import kio_message_class
from tests.scripted_answers import METADATA_TOPIC

CLIENT_ID = "kraft-share-test"


MAX_NODE_ID = 1000  # listeners.max_node_id, set explicitly below


UNMAPPABLE_ID = 5000  # > MAX_NODE_ID: kproxy cannot give it a port


SHARE_TOPIC_ID = uuid.UUID("5ca1ab1e-0000-4000-8000-00000000cafe")


DIRECTORY_ID = uuid.UUID("d1d1d1d1-0000-4000-8000-000000000002")


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
