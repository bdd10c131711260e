"""Partition leadership as kproxy sees it pass: leader changes, redirects, recoveries.

Sans-IO: `LeaderTable.observe` takes the `LeaderObservation`s the walker found in one
response and returns the facts they establish; the caller (kproxy.observe.observability) turns
facts into metrics and events. No asyncio, no prometheus_client, no logging here.

Where leadership is visible (docs/protocol.md §2):

* the partition's own LeaderId/LeaderEpoch: Metadata, DescribeTopicPartitions, the KRaft
  quorum messages, AlterPartition (`hint=False`, `leader_id` set);
* the KIP-951 `CurrentLeader` hint that Produce v10+, Fetch v16+ (KIP-951) and
  ShareFetch/ShareAcknowledge (KIP-932) attach to a partition that failed with
  NOT_LEADER_OR_FOLLOWER (6) or FENCED_LEADER_EPOCH (74) (`hint=True`);
* an epoch alone: ListOffsets v4+ and OffsetForLeaderEpoch return the epoch of an offset
  (`leader_id=None`), which is at most the current epoch. Only the partition's leader
  answers them with error 0, so an epoch newer than kproxy knows means the responding
  node leads the partition at (at least) that epoch.

A leader change is a move to a newer (leader, epoch) state: a greater epoch, or the same
epoch with another leader. KIP-320 makes every leader election bump the epoch, so the
epoch orders observations that arrive out of order over different connections: an
older epoch is stale and ignored, and one move is counted once, by whichever response
shows it first. The first sighting of a partition is a baseline, never a change.

Every table is an LRU with a cap, so memory stays bounded however many partitions,
topics and clients pass through.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import NamedTuple, cast

from kproxy.observe.leadership_facts import (
    NO_FACTS,
    LeaderChange,
    LeadershipFacts,
    PartitionSnapshot,
    Recovery,
    Redirect,
)
from kproxy.protocol.apis import METADATA_TOPIC, METADATA_TOPIC_ID
from kproxy.protocol.walker import LeaderObservation

__all__ = [
    "NO_FACTS",
    "LeaderChange",
    "LeaderTable",
    "LeadershipFacts",
    "PartitionSnapshot",
    "Recovery",
    "Redirect",
    "topic_id_text",
]

NOT_LEADER_OR_FOLLOWER = 6
FENCED_LEADER_EPOCH = 74
REDIRECT_ERRORS = frozenset((NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH))

PRODUCE, FETCH, SHARE_FETCH, SHARE_ACKNOWLEDGE = 0, 1, 78, 79
# The data path: where a client's first success after a redirect ends its recovery.
DATA_PATH_APIS = frozenset((PRODUCE, FETCH, SHARE_FETCH, SHARE_ACKNOWLEDGE))

_ZERO_UUID = bytes(16)

DEFAULT_MAX_PARTITIONS = 100_000
DEFAULT_MAX_TOPICS = 10_000
DEFAULT_MAX_PENDING = 50_000
DEFAULT_RECOVERY_TIMEOUT_SECONDS = 300.0


class PartitionLeader:
    """What kproxy knows about one partition's leadership."""

    __slots__ = ("changed_at", "epoch", "leader", "seen_at", "topic_id")

    def __init__(
        self, leader: int, epoch: int | None, topic_id: bytes | None, seen_at: float
    ) -> None:
        self.leader = leader
        self.epoch = epoch
        self.topic_id = topic_id
        self.seen_at = seen_at
        self.changed_at: float | None = None  # None until a change was observed


class _PendingRecovery(NamedTuple):
    started: float  # monotonic seconds of the first error
    with_endpoint: bool
    topic: str | None
    topic_id: bytes | None


# A topic is keyed by its name when kproxy knows it, else by its id.
_TopicKey = str | bytes


def topic_id_text(topic_id: bytes | None) -> str | None:
    """A topic id as Kafka prints it in tools is base64; UUID text is what JSON readers
    (Spark, jq) handle without help, so that is what kproxy reports."""
    return None if topic_id is None else str(uuid.UUID(bytes=topic_id))


class LeaderTable:
    """Consumes leader observations, returns leader changes, redirects and recoveries."""

    def __init__(
        self,
        *,
        max_partitions: int = DEFAULT_MAX_PARTITIONS,
        max_topics: int = DEFAULT_MAX_TOPICS,
        max_pending: int = DEFAULT_MAX_PENDING,
        recovery_timeout_seconds: float = DEFAULT_RECOVERY_TIMEOUT_SECONDS,
        wall_clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if min(max_partitions, max_topics, max_pending) < 1:
            raise ValueError("LeaderTable caps must be >= 1")
        self.max_partitions = max_partitions
        self.max_topics = max_topics
        self.max_pending = max_pending
        self.recovery_timeout_seconds = recovery_timeout_seconds
        self._wall_clock = wall_clock
        self._monotonic = monotonic
        self._partitions: OrderedDict[tuple[str, int], PartitionLeader] = OrderedDict()
        self._topic_names: OrderedDict[bytes, str] = OrderedDict()
        # (client id, topic key, partition) -> the first error of a redirect episode
        self._pending: OrderedDict[tuple[str, _TopicKey, int], _PendingRecovery] = OrderedDict()
        # client id ("" for none) -> its pending recoveries; never replaced (held by observability)
        self.clients_awaiting_success: dict[str, int] = {}
        self.evicted_partitions = 0
        self.evicted_pending = 0
        self.expired_pending = 0

    # -- queries -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._partitions)

    @property
    def pending_recoveries(self) -> int:
        return len(self._pending)

    @property
    def known_topic_ids(self) -> int:
        return len(self._topic_names)

    def leader(self, topic: str, partition: int) -> tuple[int, int | None] | None:
        """(leader id, leader epoch) of a partition, or None if kproxy has not seen it."""
        state = self._partitions.get((topic, partition))
        return None if state is None else (state.leader, state.epoch)

    def topic_name(self, topic_id: bytes) -> str | None:
        return self._topic_names.get(topic_id)

    def snapshot(self) -> list[PartitionSnapshot]:
        """Every known partition, sorted by topic and partition (for /topology)."""
        return [
            PartitionSnapshot(
                topic, topic_id_text(s.topic_id), partition, s.leader, s.epoch, s.changed_at
            )
            for (topic, partition), s in sorted(self._partitions.items())
        ]

    # -- the one entry point ---------------------------------------------------------------
    def observe(
        self,
        api_key: int,
        client_id: str | None,
        node_id: int | None,
        observations: Iterable[LeaderObservation],
        endpoint_nodes: frozenset[int] = frozenset(),
    ) -> LeadershipFacts:
        """Facts established by one response.

        `node_id` is the node that answered (None through the bootstrap listener);
        `endpoint_nodes` are the node ids of the endpoints the same response carried.
        """
        changes: list[LeaderChange] | None = None
        redirects: list[Redirect] | None = None
        recoveries: list[Recovery] | None = None
        data_path = api_key in DATA_PATH_APIS
        client_key = client_id or ""
        client_pending = data_path and client_key in self.clients_awaiting_success
        now_wall = -1.0
        for obs in observations:
            err = obs.error_code
            leader_id = obs.leader_id
            epoch = obs.leader_epoch
            redirected = err in REDIRECT_ERRORS
            recovered = client_pending and err == 0
            if not (redirected or recovered or leader_id is not None or epoch is not None):
                continue  # the common case: a data-path partition with nothing to tell
            topic, topic_id = self._resolve(obs.topic, obs.topic_id)
            if (leader_id is not None or epoch is not None) and topic is not None:
                if now_wall < 0:
                    now_wall = self._wall_clock()
                change = self._track(topic, topic_id, obs, api_key, node_id, now_wall)
                if change is not None:
                    if changes is None:
                        changes = []
                    changes.append(change)
            if redirected:
                # The KIP-951 path: CurrentLeader names the new leader (-1 = unknown).
                to_node = None
                if obs.hint and leader_id is not None and leader_id >= 0:
                    to_node = leader_id
                with_endpoint = to_node is not None and to_node in endpoint_nodes
                if redirects is None:
                    redirects = []
                redirects.append(
                    Redirect(
                        api_key,
                        client_id,
                        topic,
                        topic_id,
                        obs.partition,
                        cast(int, err),  # one of REDIRECT_ERRORS
                        node_id,
                        to_node,
                        with_endpoint,
                    )
                )
                if data_path:
                    self._start_recovery(client_key, topic, topic_id, obs.partition, with_endpoint)
            elif recovered:
                recovery = self._finish_recovery(
                    client_key, client_id, topic, topic_id, obs.partition
                )
                if recovery is not None:
                    if recoveries is None:
                        recoveries = []
                    recoveries.append(recovery)
                    client_pending = client_key in self.clients_awaiting_success
        if changes is None and redirects is None and recoveries is None:
            return NO_FACTS
        return LeadershipFacts(changes or (), redirects or (), recoveries or ())

    # -- topics ------------------------------------------------------------------------------
    def _resolve(self, name: str | None, topic_id: bytes | None) -> tuple[str | None, bytes | None]:
        """(name, id) of a topic; learns id -> name where a response gives both (Metadata
        v10+, DescribeTopicPartitions), for responses that give ids only (Fetch v13+,
        Produce v13, KIP-516)."""
        if topic_id == _ZERO_UUID:
            topic_id = None  # the all-zero uuid means "no id" on the wire
        if topic_id is None:
            return (name or None), None
        if topic_id == METADATA_TOPIC_ID:
            return METADATA_TOPIC, topic_id  # no Metadata response ever names it
        names = self._topic_names
        if name:
            if names.get(topic_id) != name:
                names[topic_id] = name
                if len(names) > self.max_topics:
                    names.popitem(last=False)
            names.move_to_end(topic_id)
            return name, topic_id
        return names.get(topic_id), topic_id

    # -- leader tracking ------------------------------------------------------------------------
    def _track(
        self,
        topic: str,
        topic_id: bytes | None,
        obs: LeaderObservation,
        api_key: int,
        node_id: int | None,
        now: float,
    ) -> LeaderChange | None:
        leader = obs.leader_id
        epoch = obs.leader_epoch
        if epoch is not None and epoch < 0:
            epoch = None  # -1 is "no epoch" on the wire
        key = (topic, obs.partition)
        table = self._partitions
        state = table.get(key)
        if obs.hint:
            # A CurrentLeader of (-1, -1) says nothing; without an epoch a hint cannot be
            # ordered against what kproxy already knows.
            if leader is None or leader < 0 or epoch is None:
                return None
        elif leader is None:
            # Epoch only (ListOffsets, OffsetForLeaderEpoch): a lower bound of the current
            # epoch, so it never sets a baseline; it moves a known partition only when it
            # is newer and the answering node (its leader) is known.
            if (
                epoch is None
                or obs.error_code != 0
                or node_id is None
                or state is None
                or state.epoch is None
                or epoch <= state.epoch
            ):
                return None
            leader = node_id
        elif leader < 0:
            return None  # no leader (election in progress): the next leader shows the move
        if state is None or (
            topic_id is not None and state.topic_id is not None and topic_id != state.topic_id
        ):
            # First sighting, or the topic was deleted and created again under the same
            # name (a new id, epochs from 0): a new baseline either way.
            table[key] = PartitionLeader(leader, epoch, topic_id, now)
            if len(table) > self.max_partitions:
                table.popitem(last=False)
                self.evicted_partitions += 1
            return None
        table.move_to_end(key)
        state.seen_at = now
        if topic_id is not None:
            state.topic_id = topic_id
        old_leader, old_epoch = state.leader, state.epoch
        if epoch is None:
            # Metadata before v7 has no epoch: follow the leader id alone, but only while
            # no epoch is known, since it cannot be ordered against one.
            if old_epoch is not None or leader == old_leader:
                return None
        elif old_epoch is None:
            if leader == old_leader:
                state.epoch = epoch
                return None
        elif epoch < old_epoch or (epoch == old_epoch and leader == old_leader):
            return None  # stale, or the state kproxy already has
        state.leader = leader
        state.epoch = epoch
        state.changed_at = now
        return LeaderChange(
            topic, topic_id, obs.partition, old_leader, leader, old_epoch, epoch, api_key, now
        )

    # -- recoveries ---------------------------------------------------------------------------
    def _start_recovery(
        self,
        client_key: str,
        topic: str | None,
        topic_id: bytes | None,
        partition: int,
        with_endpoint: bool,
    ) -> None:
        topic_key: _TopicKey | None = topic if topic is not None else topic_id
        if topic_key is None:
            return
        pending = self._pending
        key = (client_key, topic_key, partition)
        if key in pending:
            return  # the episode started at its first error
        pending[key] = _PendingRecovery(self._monotonic(), with_endpoint, topic, topic_id)
        per_client = self.clients_awaiting_success
        per_client[client_key] = per_client.get(client_key, 0) + 1
        if len(pending) > self.max_pending:
            old_key, _ = pending.popitem(last=False)
            self._forget_pending(old_key[0])
            self.evicted_pending += 1

    def _forget_pending(self, client_key: str) -> None:
        per_client = self.clients_awaiting_success
        left = per_client[client_key] - 1
        if left:
            per_client[client_key] = left
        else:
            del per_client[client_key]

    def _finish_recovery(
        self,
        client_key: str,
        client_id: str | None,
        topic: str | None,
        topic_id: bytes | None,
        partition: int,
    ) -> Recovery | None:
        pending = self._pending
        started = None
        # The error may have been keyed by id before the name was known (or the reverse
        # cannot happen: a name, once known, is what `_resolve` returns).
        for topic_key in (topic, topic_id):
            if topic_key is not None:
                key = (client_key, topic_key, partition)
                started = pending.pop(key, None)
                if started is not None:
                    self._forget_pending(client_key)
                    break
        if started is None:
            return None
        seconds = self._monotonic() - started.started
        if seconds > self.recovery_timeout_seconds:
            # The client went away and came back much later: not a recovery time.
            self.expired_pending += 1
            return None
        return Recovery(
            topic if topic is not None else started.topic,
            topic_id if topic_id is not None else started.topic_id,
            partition,
            client_id,
            seconds,
            started.with_endpoint,
        )
