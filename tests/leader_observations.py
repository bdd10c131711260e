"""Leader observations as the walker reports them, and a LeaderTable on a clock the
test moves: what the leadership tests build their cases from.
"""

from __future__ import annotations

import uuid

from kproxy.observe.leadership import LeadershipFacts, LeaderTable
from kproxy.protocol.walker import LeaderObservation
from tests.clock import Clock

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
OFFSET_FOR_LEADER_EPOCH, DESCRIBE_TOPIC_PARTITIONS, SHARE_FETCH, SHARE_ACK = 23, 75, 78, 79
TID = uuid.UUID("1b2a7c52-0a1e-4c1b-9d6f-5b0e6c1f3a77").bytes
TID2 = uuid.UUID("00000000-0000-4000-8000-000000000002").bytes


def table(**kwargs: object) -> tuple[LeaderTable, Clock]:
    clock = Clock(1_700_000_000.0)
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
