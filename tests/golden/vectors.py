"""The golden vectors' shape and fixed mapping: a `Vector` names a wire frame in
tests/golden/ (``<name>.hex``) and its rewrite (``<name>.rewritten.hex``), and lists the
endpoints and leaders the walk must find; `golden_target` is the mapping the rewrites
were made with (node 99 cannot be mapped).
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from pathlib import Path

from kproxy.protocol.walker import Endpoint

GOLDEN = Path(__file__).resolve().parent
CORRELATION_ID = 0x0A0B0C0D
CLIENT_ID = "golden"
REMOVED_NODE = 99  # the fixed mapping cannot map this node id
TOPIC_ID = uuid.UUID("8a7d3c2e-5b1f-4c6a-9e0d-1f2a3b4c5d6e")
TOPIC_ID_2 = uuid.UUID("0f9e8d7c-6b5a-4938-8271-605f4e3d2c1b")


def record_batch(base_offset: int, records: bytes, count: int) -> bytes:
    """A magic-2 record batch (docs/protocol.md §5); the CRC is not computed (nothing checks it)."""
    t = 1_700_000_000_000
    # PartitionLeaderEpoch, Magic, CRC, Attributes, LastOffsetDelta, BaseTimestamp,
    # MaxTimestamp, ProducerId, ProducerEpoch, BaseSequence, RecordsCount
    after_length = struct.pack(">ibIhiqqqhii", 5, 2, 0, 0, count - 1, t, t, -1, -1, -1, count)
    after_length += records
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


# One record: Length, Attributes, TimestampDelta, OffsetDelta, Key "key", Value "value", 0 headers
RECORDS = record_batch(0, b"\x1c\x00\x00\x00\x06key\x0avalue\x00", 1)


def golden_target(node_id: int | None, listener: str | None) -> tuple[str, int] | None:
    """The fixed mapping of the golden vectors: node 99 is unmappable."""
    if node_id == REMOVED_NODE:
        return None
    if listener is None:
        return f"b{node_id}.kproxy.test", 30000 + (node_id or 0)
    if node_id is None:
        return f"{listener.lower()}.kproxy.test", 31000
    return f"{listener.lower()}-{node_id}.kproxy.test", 32000 + node_id % 1000


def golden_mapping(ep: Endpoint) -> tuple[str, int] | None:
    return golden_target(ep.node_id, ep.listener)


EndpointRow = tuple[str, int | None, str | None, str, int, str | None]
LeaderRow = tuple[str | None, uuid.UUID | None, int, int | None, int | None, int | None, bool]


@dataclasses.dataclass(frozen=True)
class Vector:
    name: str
    api_key: int
    version: int
    kind: str
    endpoints: list[EndpointRow]  # (path, node id, listener, host, port, rack)
    leaders: list[LeaderRow]  # (topic, topic id, partition, error, leader, epoch, hint)
    by_hand: bool = False  # written from the schema; otherwise encoded by kio

    @property
    def is_request(self) -> bool:
        return self.kind == "request"

    def wire(self) -> bytes:
        return _read_hex(GOLDEN / f"{self.name}.hex")

    def rewritten(self) -> bytes:
        return _read_hex(GOLDEN / f"{self.name}.rewritten.hex")


def _read_hex(path: Path) -> bytes:
    return bytes.fromhex("".join(path.read_text().split()))
