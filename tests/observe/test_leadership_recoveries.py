"""LeaderTable's recoveries (from a client's first error on a partition to its first
success there) and the bounds on everything it keeps.
"""

from __future__ import annotations

import uuid

import pytest

from kproxy.observe.leadership import NO_FACTS, LeaderTable, topic_id_text
from tests.leader_observations import (
    FETCH,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    SHARE_ACK,
    SHARE_FETCH,
    TID,
    hint,
    meta,
    result,
    table,
)

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
