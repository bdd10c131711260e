"""What a walk finds in a message: broker endpoints with the byte spans a rewrite needs,
and partition leadership."""

from __future__ import annotations

from typing import NamedTuple

from kproxy.protocol.hostport import format_host_port


class TaggedSpan(NamedTuple):
    """A tagged field that encloses an endpoint: its size varint and its value."""

    size_start: int
    size_end: int
    value_start: int
    value_end: int


class ArraySpan:
    """The count of an array whose elements are endpoints."""

    __slots__ = ("compact", "count", "count_end", "count_start")

    def __init__(self, count_start: int, count_end: int, count: int, compact: bool) -> None:
        self.count_start = count_start
        self.count_end = count_end
        self.count = count
        self.compact = compact


class Endpoint:
    """A broker or controller address found in a message."""

    __slots__ = (
        "array",
        "compact",
        "elem_end",
        "elem_start",
        "error_pos",
        "host",
        "host_end",
        "host_start",
        "listener",
        "node_id",
        "path",
        "port",
        "port_start",
        "port_width",
        "rack",
        "tagged",
    )

    def __init__(
        self,
        path: str,
        node_id: int | None,
        listener: str | None,
        host: str,
        port: int,
        rack: str | None,
        compact: bool,
        port_width: int,
        host_start: int,
        host_end: int,
        port_start: int,
        elem_start: int,
        elem_end: int,
        array: ArraySpan | None,
        error_pos: int | None,
        tagged: tuple[TaggedSpan, ...],
    ) -> None:
        self.path = path
        self.node_id = node_id
        self.listener = listener
        self.host = host
        self.port = port
        self.rack = rack
        self.compact = compact
        self.port_width = port_width
        self.host_start = host_start
        self.host_end = host_end
        self.port_start = port_start
        self.elem_start = elem_start
        self.elem_end = elem_end
        self.array = array
        self.error_pos = error_pos
        self.tagged = tagged

    def __repr__(self) -> str:
        who = f"node {self.node_id}" if self.node_id is not None else f"listener {self.listener}"
        return f"Endpoint({self.path or '<top>'}: {who} {format_host_port(self.host, self.port)})"


class LeaderObservation(NamedTuple):
    """What one partition-level struct says about its partition's leadership.

    `hint` is True when the leader came from a KIP-951 `CurrentLeader` (a redirect hint
    on Produce/Fetch/ShareFetch/ShareAcknowledge), False when it is the partition's own
    LeaderId/LeaderEpoch (Metadata, DescribeTopicPartitions, KRaft). Either may be None.
    """

    topic: str | None
    topic_id: bytes | None
    partition: int
    error_code: int | None
    leader_id: int | None
    leader_epoch: int | None
    hint: bool


class ConfigEntry(NamedTuple):
    """A configuration entry (DescribeConfigs): its name, and where its value is."""

    name: str
    value: str | None
    value_start: int  # the value's length prefix
    value_end: int
    compact: bool
    sensitive_pos: int | None  # its IsSensitive flag (synonyms have none)


class WalkResult(NamedTuple):
    endpoints: list[Endpoint]
    leaders: list[LeaderObservation]
    end: int  # offset just after the message
    configs: list[ConfigEntry]
