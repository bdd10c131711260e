"""LeaderTable: leader changes, redirects and recoveries from leader observations."""

from __future__ import annotations

import datetime
import sys
import uuid

import pytest
from kio.schema.errors import ErrorCode

from kproxy.config import parse_config
from kproxy.leadership import NO_FACTS, LeadershipFacts, LeaderTable, topic_id_text
from kproxy.observability import Observability
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.walker import LeaderObservation, walk
from tests.kio_support import encode_response_frame, kio_message_class

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
OFFSET_FOR_LEADER_EPOCH, DESCRIBE_TOPIC_PARTITIONS, SHARE_FETCH, SHARE_ACK = 23, 75, 78, 79
TID = uuid.UUID("1b2a7c52-0a1e-4c1b-9d6f-5b0e6c1f3a77").bytes
TID2 = uuid.UUID("00000000-0000-4000-8000-000000000002").bytes


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def table(**kwargs: object) -> tuple[LeaderTable, Clock]:
    clock = Clock()
    return LeaderTable(wall_clock=clock, monotonic=clock, **kwargs), clock  # type: ignore[arg-type]


def meta(
    partition: int,
    leader: int,
    epoch: int | None,
    topic: str | None = "t",
    topic_id: bytes | None = None,
    error: int = 0,
) -> LeaderObservation:
    """The partition's own leader (Metadata, DescribeTopicPartitions, KRaft)."""
    return LeaderObservation(topic, topic_id, partition, error, leader, epoch, False)


def hint(
    partition: int,
    leader: int,
    epoch: int,
    error: int = 6,
    topic: str | None = "t",
    topic_id: bytes | None = None,
) -> LeaderObservation:
    """A KIP-951 CurrentLeader on a failed partition (Produce v10+, Fetch v16+, Share)."""
    return LeaderObservation(topic, topic_id, partition, error, leader, epoch, True)


def result(
    partition: int, error: int = 0, topic: str | None = "t", topic_id: bytes | None = None
) -> LeaderObservation:
    """A data-path partition result with no leader in it."""
    return LeaderObservation(topic, topic_id, partition, error, None, None, False)


def epoch_only(partition: int, epoch: int, error: int = 0, topic: str = "t") -> LeaderObservation:
    """ListOffsets / OffsetForLeaderEpoch: the epoch of an offset, no leader id."""
    return LeaderObservation(topic, None, partition, error, None, epoch, False)


def changes(facts: LeadershipFacts) -> list[tuple[int, int, int | None, int | None, int]]:
    return [
        (c.old_leader, c.new_leader, c.old_epoch, c.new_epoch, c.source_api) for c in facts.changes
    ]


# -- leader changes ------------------------------------------------------------------------


def test_first_sighting_is_a_baseline_not_a_change() -> None:
    t, _ = table()
    assert t.observe(METADATA, "c", None, [meta(0, 1, 5), meta(1, 2, 3)]) is NO_FACTS
    assert t.leader("t", 0) == (1, 5)
    assert t.leader("t", 1) == (2, 3)
    assert len(t) == 2


def test_newer_epoch_counts_once_whichever_response_shows_it_first() -> None:
    t, clock = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 5)])
    clock.now += 10
    # The producer learns of the move from its Produce response (KIP-951) first...
    facts = t.observe(PRODUCE, "p", 1, [hint(0, 2, 6)], frozenset({2}))
    assert changes(facts) == [(1, 2, 5, 6, PRODUCE)]
    assert facts.changes[0].at == clock.now
    # ...then a consumer's Fetch hint and the next Metadata show the same move again.
    assert t.observe(FETCH, "q", 1, [hint(0, 2, 6)], frozenset({2})).changes == ()
    assert t.observe(METADATA, "c", None, [meta(0, 2, 6)]).changes == ()
    assert t.leader("t", 0) == (2, 6)


def test_authoritative_first_then_hint_for_the_same_move_is_not_counted_again() -> None:
    t, _ = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 5)])
    assert changes(t.observe(DESCRIBE_TOPIC_PARTITIONS, "a", 3, [meta(0, 3, 6)])) == [
        (1, 3, 5, 6, DESCRIBE_TOPIC_PARTITIONS)
    ]
    assert t.observe(PRODUCE, "p", 1, [hint(0, 3, 6)]).changes == ()


def test_stale_epochs_are_ignored() -> None:
    t, _ = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 7)])
    # Another connection's older Metadata, and an old hint, arrive late.
    assert t.observe(METADATA, "c2", None, [meta(0, 2, 6)]).changes == ()
    assert t.observe(FETCH, "q", 2, [hint(0, 3, 5)]).changes == ()
    assert t.leader("t", 0) == (1, 7)


def test_epoch_bump_with_the_same_leader_is_a_change() -> None:
    t, _ = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 7)])
    assert changes(t.observe(METADATA, "c", None, [meta(0, 1, 8)])) == [(1, 1, 7, 8, METADATA)]


def test_same_epoch_other_leader_is_a_change() -> None:
    t, _ = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 7)])
    assert changes(t.observe(METADATA, "c", None, [meta(0, 2, 7)])) == [(1, 2, 7, 7, METADATA)]
    # ...and seeing that state again is not.
    assert t.observe(METADATA, "c", None, [meta(0, 2, 7)]).changes == ()


def test_each_move_counts_once_across_many_moves() -> None:
    t, _ = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 0)])
    total = 0
    for epoch in range(1, 21):
        leader = epoch % 3 + 1
        for api, obs in (
            (PRODUCE, hint(0, leader, epoch)),
            (FETCH, hint(0, leader, epoch)),
            (METADATA, meta(0, leader, epoch)),
        ):
            total += len(t.observe(api, "c", 1, [obs]).changes)
    assert total == 20


def test_hints_without_a_leader_or_epoch_are_ignored() -> None:
    t, _ = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 5)])
    # ShareFetch always encodes CurrentLeader; (-1, -1) says nothing.
    assert t.observe(SHARE_FETCH, "s", 1, [hint(0, -1, -1, error=0)]) is NO_FACTS
    assert t.observe(PRODUCE, "p", 1, [hint(0, 2, -1, error=0)]) is NO_FACTS
    assert t.leader("t", 0) == (1, 5)


def test_first_sighting_through_a_hint_is_a_baseline() -> None:
    t, _ = table()
    facts = t.observe(PRODUCE, "p", 1, [hint(0, 2, 6)], frozenset({2}))
    assert facts.changes == ()
    assert len(facts.redirects) == 1
    assert t.leader("t", 0) == (2, 6)


def test_no_leader_during_election_is_not_a_state() -> None:
    t, _ = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 5)])
    assert t.observe(METADATA, "c", None, [meta(0, -1, 6, error=5)]).changes == ()
    assert t.leader("t", 0) == (1, 5)
    assert changes(t.observe(METADATA, "c", None, [meta(0, 2, 7)])) == [(1, 2, 5, 7, METADATA)]


def test_metadata_without_epochs_follows_leader_ids_until_an_epoch_is_known() -> None:
    t, _ = table()
    t.observe(METADATA, "old", None, [meta(0, 1, None)])
    assert changes(t.observe(METADATA, "old", None, [meta(0, 2, None)])) == [
        (1, 2, None, None, METADATA)
    ]
    # A v7+ Metadata fills in the epoch of the same leader: not a move.
    assert t.observe(METADATA, "new", None, [meta(0, 2, 4)]).changes == ()
    assert t.leader("t", 0) == (2, 4)
    # Once an epoch is known, epoch-less observations cannot be ordered: ignored.
    assert t.observe(METADATA, "old", None, [meta(0, 1, None)]).changes == ()
    assert t.leader("t", 0) == (2, 4)


def test_epoch_only_newer_with_no_error_moves_to_the_answering_node() -> None:
    t, _ = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 5)])
    assert changes(t.observe(LIST_OFFSETS, "c", 3, [epoch_only(0, 6)])) == [
        (1, 3, 5, 6, LIST_OFFSETS)
    ]
    assert changes(t.observe(OFFSET_FOR_LEADER_EPOCH, "c", 3, [epoch_only(0, 7)])) == [
        (3, 3, 6, 7, OFFSET_FOR_LEADER_EPOCH)
    ]
    assert t.leader("t", 0) == (3, 7)


def test_epoch_only_is_ignored_when_not_newer_failed_unattributable_or_first() -> None:
    t, _ = table()
    # First sighting: the epoch of an offset is only a lower bound, not a baseline.
    assert t.observe(LIST_OFFSETS, "c", 2, [epoch_only(9, 3)]) is NO_FACTS
    assert t.leader("t", 9) is None
    t.observe(METADATA, "c", None, [meta(0, 1, 5)])
    assert t.observe(LIST_OFFSETS, "c", 2, [epoch_only(0, 5)]).changes == ()  # not newer
    assert t.observe(LIST_OFFSETS, "c", 2, [epoch_only(0, 4)]).changes == ()  # older
    assert t.observe(LIST_OFFSETS, "c", 2, [epoch_only(0, 6, error=75)]).changes == ()
    assert t.observe(LIST_OFFSETS, "c", None, [epoch_only(0, 6)]).changes == ()  # bootstrap
    assert t.leader("t", 0) == (1, 5)


def test_topic_ids_map_to_names_for_id_only_responses() -> None:
    t, _ = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 5, topic="orders", topic_id=TID)])
    assert t.topic_name(TID) == "orders"
    facts = t.observe(FETCH, "q", 1, [hint(0, 2, 6, topic=None, topic_id=TID)], frozenset({2}))
    assert changes(facts) == [(1, 2, 5, 6, FETCH)]
    assert facts.changes[0].topic == "orders"
    assert facts.redirects[0].topic == "orders"
    assert facts.redirects[0].topic_id == TID


def test_unknown_topic_id_is_not_tracked_but_still_redirects() -> None:
    t, _ = table()
    facts = t.observe(FETCH, "q", 1, [hint(0, 2, 6, topic=None, topic_id=TID)])
    assert facts.changes == ()
    assert len(t) == 0
    assert facts.redirects[0].topic is None
    assert facts.redirects[0].topic_id == TID


def test_zero_uuid_means_no_topic_id() -> None:
    t, _ = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 5, topic_id=bytes(16))])
    assert t.known_topic_ids == 0
    assert t.snapshot()[0].topic_id is None


def test_recreated_topic_starts_a_new_baseline() -> None:
    t, _ = table()
    t.observe(METADATA, "c", None, [meta(0, 1, 9, topic_id=TID)])
    # Deleted and created again: a new id, epochs from 0. Neither stale nor a change.
    assert t.observe(METADATA, "c", None, [meta(0, 2, 0, topic_id=TID2)]).changes == ()
    assert t.leader("t", 0) == (2, 0)
    assert changes(t.observe(METADATA, "c", None, [meta(0, 3, 1, topic_id=TID2)])) == [
        (2, 3, 0, 1, METADATA)
    ]


# -- redirects ------------------------------------------------------------------------------


def test_redirect_with_new_leader_and_its_endpoint() -> None:
    t, _ = table()
    facts = t.observe(PRODUCE, "p", 1, [hint(4, 2, 6)], frozenset({2}))
    (r,) = facts.redirects
    assert (r.api_key, r.client_id, r.topic, r.partition, r.error_code) == (PRODUCE, "p", "t", 4, 6)
    assert (r.from_node, r.to_node, r.with_endpoint) == (1, 2, True)


def test_redirect_with_new_leader_but_no_endpoint_for_it() -> None:
    t, _ = table()
    # The broker found no endpoint for the leader on this listener (docs/protocol.md §1).
    (r,) = t.observe(FETCH, "q", 1, [hint(0, 2, 6, error=74)], frozenset({3})).redirects
    assert (r.error_code, r.from_node, r.to_node, r.with_endpoint) == (74, 1, 2, False)


def test_redirect_without_leader_forces_a_metadata_refresh() -> None:
    t, _ = table()
    facts = t.observe(
        PRODUCE,
        "p",
        1,
        [result(0, error=6), hint(1, -1, -1), result(2, error=74)],
        frozenset({1}),
    )
    assert [(r.partition, r.error_code, r.to_node, r.with_endpoint) for r in facts.redirects] == [
        (0, 6, None, False),
        (1, 6, None, False),
        (2, 74, None, False),
    ]


def test_redirect_through_bootstrap_has_no_from_node_and_other_errors_are_not_redirects() -> None:
    t, _ = table()
    facts = t.observe(PRODUCE, "p", None, [hint(0, 2, 6), result(1, error=3), result(2)])
    assert [(r.partition, r.from_node) for r in facts.redirects] == [(0, None)]


# -- recoveries -----------------------------------------------------------------------------


def test_recovery_measures_from_the_first_error_and_keeps_its_path() -> None:
    t, clock = table()
    t.observe(PRODUCE, "p", 1, [hint(0, 2, 6)], frozenset({2}))
    clock.now += 0.004
    # A second error in the same episode does not restart the clock.
    t.observe(PRODUCE, "p", 1, [result(0, error=6)])
    clock.now += 0.0035
    (rec,) = t.observe(PRODUCE, "p", 2, [result(0)]).recoveries
    assert (rec.topic, rec.partition, rec.client_id, rec.with_endpoint) == ("t", 0, "p", True)
    assert rec.seconds * 1000 == pytest.approx(7.5, abs=1e-3)
    # The episode is closed: the next success is not another recovery.
    assert t.observe(PRODUCE, "p", 2, [result(0)]) is NO_FACTS
    assert t.pending_recoveries == 0


def test_recovery_without_endpoint_path() -> None:
    t, clock = table()
    t.observe(FETCH, "q", 1, [result(3, error=6)])
    clock.now += 1.25
    (rec,) = t.observe(FETCH, "q", 2, [result(3)]).recoveries
    assert rec.with_endpoint is False
    assert rec.seconds == pytest.approx(1.25, abs=1e-6)


def test_recovery_is_per_client_and_per_partition() -> None:
    t, clock = table()
    t.observe(PRODUCE, "a", 1, [hint(0, 2, 6)], frozenset({2}))
    clock.now += 1
    # Another client's success, and this client's success on another partition, end nothing.
    assert t.observe(PRODUCE, "b", 2, [result(0)]).recoveries == ()
    assert t.observe(PRODUCE, "a", 2, [result(1)]).recoveries == ()
    assert len(t.observe(PRODUCE, "a", 2, [result(0)]).recoveries) == 1


def test_recovery_counts_only_data_path_results() -> None:
    t, clock = table()
    # A ListOffsets error is a redirect, but not the start of a data-path recovery.
    assert len(t.observe(LIST_OFFSETS, "c", 1, [result(0, error=6)]).redirects) == 1
    assert t.pending_recoveries == 0
    t.observe(SHARE_FETCH, "s", 1, [hint(0, 2, 6)], frozenset({2}))
    clock.now += 0.5
    # Metadata success is not a data-path success; ShareAcknowledge is.
    assert t.observe(METADATA, "s", None, [meta(0, 2, 6)]).recoveries == ()
    (rec,) = t.observe(SHARE_ACK, "s", 2, [hint(0, -1, -1, error=0)]).recoveries
    assert rec.with_endpoint is True


def test_recovery_across_topic_name_and_topic_id() -> None:
    t, clock = table()
    # The error came by id before kproxy knew the name...
    t.observe(FETCH, "q", 1, [result(0, error=6, topic=None, topic_id=TID)])
    t.observe(METADATA, "q", None, [meta(0, 2, 6, topic="orders", topic_id=TID)])
    clock.now += 0.25
    # ...the success by id, which now resolves to the name.
    (rec,) = t.observe(FETCH, "q", 2, [result(0, topic=None, topic_id=TID)]).recoveries
    assert (rec.topic, rec.topic_id) == ("orders", TID)


def test_no_client_id_is_a_client_too() -> None:
    t, clock = table()
    t.observe(PRODUCE, None, 1, [result(0, error=6)])
    clock.now += 0.1
    (rec,) = t.observe(PRODUCE, None, 2, [result(0)]).recoveries
    assert rec.client_id is None


def test_stale_episodes_are_not_recoveries() -> None:
    t, clock = table(recovery_timeout_seconds=60.0)
    t.observe(PRODUCE, "p", 1, [result(0, error=6)])
    clock.now += 61
    assert t.observe(PRODUCE, "p", 2, [result(0)]).recoveries == ()
    assert t.expired_pending == 1
    assert t.pending_recoveries == 0


# -- bounded state ------------------------------------------------------------------------------


def test_partitions_are_bounded_lru() -> None:
    t, _ = table(max_partitions=3)
    t.observe(METADATA, "c", None, [meta(p, 1, 1) for p in range(3)])
    t.observe(METADATA, "c", None, [meta(0, 1, 1)])  # touch 0: partition 1 is the oldest now
    t.observe(METADATA, "c", None, [meta(3, 1, 1)])
    assert len(t) == 3
    assert t.leader("t", 1) is None
    assert t.leader("t", 0) == (1, 1)
    assert t.evicted_partitions == 1
    # An evicted partition comes back as a first sighting, not a change.
    assert t.observe(METADATA, "c", None, [meta(1, 2, 2)]).changes == ()


def test_topic_ids_are_bounded() -> None:
    t, _ = table(max_topics=2)
    ids = [uuid.uuid4().bytes for _ in range(5)]
    for i, tid in enumerate(ids):
        t.observe(METADATA, "c", None, [meta(0, 1, 1, topic=f"t{i}", topic_id=tid)])
    assert t.known_topic_ids == 2
    assert t.topic_name(ids[0]) is None
    assert t.topic_name(ids[4]) == "t4"


def test_pending_recoveries_are_bounded() -> None:
    t, clock = table(max_pending=10)
    for client in range(100):
        t.observe(PRODUCE, f"c{client}", 1, [result(0, error=6)])
    assert t.pending_recoveries == 10
    assert t.evicted_pending == 90
    clock.now += 1
    assert t.observe(PRODUCE, "c0", 2, [result(0)]).recoveries == ()  # forgotten
    assert len(t.observe(PRODUCE, "c99", 2, [result(0)]).recoveries) == 1


def test_memory_stays_bounded_under_many_partitions_and_clients() -> None:
    t, _ = table(max_partitions=1000, max_topics=50, max_pending=500)
    for i in range(20_000):
        tid = uuid.UUID(int=i + 1).bytes
        t.observe(METADATA, "c", None, [meta(i % 7, 1, i, topic=f"t{i}", topic_id=tid)])
        t.observe(PRODUCE, f"client-{i}", 1, [result(0, error=6, topic=f"t{i}")])
    assert len(t) == 1000
    assert t.known_topic_ids == 50
    assert t.pending_recoveries == 500


def test_snapshot_is_sorted_with_change_times() -> None:
    t, clock = table()
    t.observe(
        METADATA, "c", None, [meta(1, 1, 1, topic="b"), meta(0, 1, 1, topic="a", topic_id=TID)]
    )
    clock.now += 5
    t.observe(METADATA, "c", None, [meta(1, 2, 2, topic="b")])
    snap = t.snapshot()
    assert [(p.topic, p.partition, p.leader, p.leader_epoch) for p in snap] == [
        ("a", 0, 1, 1),
        ("b", 1, 2, 2),
    ]
    assert snap[0].changed_at is None
    assert snap[0].topic_id == topic_id_text(TID) == str(uuid.UUID(bytes=TID))
    assert snap[1].changed_at == clock.now


def test_caps_must_be_positive() -> None:
    with pytest.raises(ValueError):
        LeaderTable(max_partitions=0)


# -- with the real walker -------------------------------------------------------------------


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
    dict, as the observer the sessions ask holds it."""
    t, _ = table()
    settings = parse_config({"cluster": {"bootstrap_servers": ["b.invalid:9092"]}})
    observer = Observability(settings, runtime_collectors=False, leader_table=t)
    t.observe(METADATA, "c", None, [meta(0, 1, 5)])
    assert not observer.awaits_success("p")
    t.observe(PRODUCE, "p", 1, [hint(0, 2, 6)], frozenset({2}))
    assert observer.awaits_success("p") and not observer.awaits_success("q")
    assert not observer.awaits_success(None)
    (recovery,) = t.observe(PRODUCE, "p", 2, [result(0)]).recoveries
    assert recovery.partition == 0
    assert not observer.awaits_success("p")
    assert not t.clients_awaiting_success
