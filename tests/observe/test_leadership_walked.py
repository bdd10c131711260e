"""LeaderTable fed by the real walker: observations walked from kio-encoded Produce
responses and from the KRaft quorum's own messages, and a client awaiting a success
from its redirect to its recovery.
"""

from __future__ import annotations

import datetime
import sys
import uuid

from kio.schema.errors import ErrorCode

from kproxy.config.settings import parse_config
from kproxy.observe.leadership import NO_FACTS
from kproxy.observe.observability import Observability
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.walker import walk
from kproxy.runtime.client import ClientConnection
from kproxy.runtime.proxy import Proxy
from tests.kio_support import encode_response_frame, kio_message_class
from tests.leader_observations import FETCH, METADATA, PRODUCE, changes, hint, meta, result, table


def test_observations_walked_from_a_kio_encoded_produce_v10_response() -> None:
    """A Produce v10 response encoded by kio (not by kproxy), walked by kproxy's walker,
    gives the LeaderTable a KIP-951 redirect with its endpoint, and a success."""
    cls = kio_message_class(PRODUCE, 10, "response")
    assert cls is not None
    mod = sys.modules[cls.__module__]

    def partition(index: int, error: ErrorCode, leader: int, epoch: int) -> object:
        return mod.PartitionProduceResponse(
            index=index,
            error_code=error,
            base_offset=-1,
            log_append_time=None,
            log_start_offset=-1,
            record_errors=(),
            error_message=None,
            current_leader=mod.LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch),
        )

    msg = cls(
        responses=(
            mod.TopicProduceResponse(
                name="orders",
                partition_responses=(
                    partition(0, ErrorCode.not_leader_or_follower, 2, 8),
                    partition(1, ErrorCode.none, -1, -1),
                ),
            ),
        ),
        throttle_time=datetime.timedelta(0),
        node_endpoints=(mod.NodeEndpoint(node_id=2, host="broker-2", port=9092, rack=None),),
    )
    frame = memoryview(encode_response_frame(msg, 7))[4:]
    _, body = parse_response_header(frame, 1)
    walked = walk(frame, body, PRODUCE, 10, False)
    nodes = frozenset(e.node_id for e in walked.endpoints if e.node_id is not None)
    t, clock = table()
    t.observe(METADATA, "p", None, [meta(0, 1, 7, topic="orders")])
    facts = t.observe(PRODUCE, "p", 1, walked.leaders, nodes)
    assert changes(facts) == [(1, 2, 7, 8, PRODUCE)]
    (r,) = facts.redirects
    assert (r.topic, r.partition, r.from_node, r.to_node, r.with_endpoint) == (
        "orders",
        0,
        1,
        2,
        True,
    )
    clock.now += 0.002
    ok = walk(frame, body, PRODUCE, 10, False).leaders[1]
    (rec,) = t.observe(PRODUCE, "p", 2, [ok._replace(partition=0)]).recoveries
    assert rec.with_endpoint is True


def test_the_kraft_quorum_leader_from_raft_fetch_and_begin_quorum_epoch() -> None:
    """KIP-853 through kproxy: every Fetch response of the metadata log carries the
    quorum's CurrentLeader, on the fixed metadata topic id (Uuid.METADATA_TOPIC_ID), and
    BeginQuorumEpoch names `__cluster_metadata`: both are one partition, and a newer
    epoch is a leader change."""
    from kio.schema.begin_quorum_epoch.v1 import response as bqe
    from kio.schema.fetch.v17 import response as fetch

    partition = fetch.PartitionData(
        partition_index=0,
        error_code=ErrorCode.none,
        high_watermark=10,
        last_stable_offset=10,
        log_start_offset=0,
        diverging_epoch=fetch.EpochEndOffset(epoch=-1, end_offset=-1),
        current_leader=fetch.LeaderIdAndEpoch(leader_id=2, leader_epoch=7),
        snapshot_id=fetch.SnapshotId(end_offset=-1, epoch=-1),
        aborted_transactions=(),
        preferred_read_replica=-1,
        records=None,
    )
    raft_fetch = fetch.FetchResponse(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        session_id=0,
        responses=(
            fetch.FetchableTopicResponse(topic_id=uuid.UUID(int=1), partitions=(partition,)),
        ),
        node_endpoints=(),
    )
    frame = memoryview(encode_response_frame(raft_fetch, 7))[4:]
    _, body = parse_response_header(frame, 1)
    t, _ = table()
    assert t.observe(FETCH, "raft", 1, walk(frame, body, FETCH, 17, False).leaders) is NO_FACTS
    assert t.leader("__cluster_metadata", 0) == (2, 7)

    begin = bqe.BeginQuorumEpochResponse(
        error_code=ErrorCode.none,
        topics=(
            bqe.TopicData(
                topic_name="__cluster_metadata",
                partitions=(
                    bqe.PartitionData(
                        partition_index=0, error_code=ErrorCode.none, leader_id=3, leader_epoch=8
                    ),
                ),
            ),
        ),
        node_endpoints=(),
    )
    frame = memoryview(encode_response_frame(begin, 8))[4:]
    _, body = parse_response_header(frame, 1)
    facts = t.observe(53, "raft", 3, walk(frame, body, 53, 1, False).leaders)
    assert changes(facts) == [(2, 3, 7, 8, 53)]
    assert facts.changes[0].topic == "__cluster_metadata"


def test_a_client_awaits_a_success_from_its_redirect_to_its_recovery() -> None:
    """What decides whether a plain Produce response must still be walked: the table's
    dict, as the observer holds it and a client connection's session reads it, a live
    view taken once (when the connection opens) and read again below."""
    t, _ = table()
    settings = parse_config({"cluster": {"bootstrap_servers": ["b.invalid:9092"]}})
    observer = Observability(settings, runtime_collectors=False, leader_table=t)
    t.observe(METADATA, "c", None, [meta(0, 1, 5)])
    connection = ClientConnection(Proxy(settings, observer).services, "bootstrap", None)
    awaiting = connection.session.awaiting_success
    assert awaiting is not None and "p" not in awaiting
    t.observe(PRODUCE, "p", 1, [hint(0, 2, 6)], frozenset({2}))
    assert "p" in awaiting and "q" not in awaiting
    assert "" not in awaiting  # a client without an id
    (recovery,) = t.observe(PRODUCE, "p", 2, [result(0)]).recoveries
    assert recovery.partition == 0
    assert "p" not in awaiting
    assert not t.clients_awaiting_success
