"""The facts a `LeaderTable` establishes from what passes through kproxy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class LeaderChange(NamedTuple):
    """A partition's leader or leader epoch moved to a newer state."""

    topic: str
    topic_id: bytes | None
    partition: int
    old_leader: int
    new_leader: int
    old_epoch: int | None  # None: not known (Metadata before v7 carries no epoch)
    new_epoch: int | None
    source_api: int  # the api key of the response that showed the move first
    at: float  # wall-clock seconds


class Redirect(NamedTuple):
    """A partition result that failed with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH."""

    api_key: int
    client_id: str | None
    topic: str | None  # None when only a topic id is known (Fetch v13+) and not its name
    topic_id: bytes | None
    partition: int
    error_code: int
    from_node: int | None  # the node that answered; None through the bootstrap listener
    to_node: int | None  # the KIP-951 CurrentLeader, None when the response names none
    with_endpoint: bool  # the same response carried to_node's NodeEndpoint


class Recovery(NamedTuple):
    """A client's first success on a partition after a redirect there."""

    topic: str | None
    topic_id: bytes | None
    partition: int
    client_id: str | None
    seconds: float  # from the first NOT_LEADER/FENCED error to this success
    with_endpoint: bool  # whether that first error came with the new leader's endpoint


class LeadershipFacts(NamedTuple):
    changes: Sequence[LeaderChange]
    redirects: Sequence[Redirect]
    recoveries: Sequence[Recovery]


NO_FACTS = LeadershipFacts((), (), ())


class PartitionSnapshot(NamedTuple):
    topic: str
    topic_id: str | None  # canonical UUID text
    partition: int
    leader: int
    leader_epoch: int | None
    changed_at: float | None  # wall-clock seconds of the last observed change
