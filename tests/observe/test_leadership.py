"""LeaderTable: leader changes and redirects from leader observations (recoveries and
bounds in test_leadership_recoveries.py, the real walker in test_leadership_walked.py)."""

from __future__ import annotations

from kproxy.observe.leadership import NO_FACTS
from tests.leader_observations import (
    DESCRIBE_TOPIC_PARTITIONS,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    OFFSET_FOR_LEADER_EPOCH,
    PRODUCE,
    SHARE_FETCH,
    TID,
    TID2,
    changes,
    epoch_only,
    hint,
    meta,
    result,
    table,
)

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
