"""What the tests of the response scans share (`test_produce_scan`, `test_fetch_scan`):
kio messages changed in one place, and the scan's answer at a frame's edges."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterator
from typing import Any

from kio.schema.errors import ErrorCode

from kproxy.protocol.headers import parse_response_header
from tests.kio_support import encode_response_frame

# Bytes a next frame in the same read could start with.
AFTER = b"\x00\x00\x00\x01" * 8
IsPlain = Callable[[bytes, int, int, int], bool]


def scanned(is_plain: IsPlain, msg: Any, version: int, flexible: bool) -> tuple[bool, bytes, int]:
    """The kio message encoded by kio and scanned: (plain, the frame after its size, where
    its body starts)."""
    frame = encode_response_frame(msg, 1)[4:]
    _, body = parse_response_header(memoryview(frame), 1 if flexible else 0)
    return is_plain(frame, body, len(frame), version), frame, body


def with_first_partition(msg: Any, partitions: str, **changes: Any) -> Any:
    """``msg`` with its first topic's first partition (in the field `partitions`)
    changed so."""
    topic = msg.responses[0]
    parts = getattr(topic, partitions)
    parts = (dataclasses.replace(parts[0], **changes), *parts[1:])
    topics = (dataclasses.replace(topic, **{partitions: parts}), *msg.responses[1:])
    return dataclasses.replace(msg, responses=topics)


def spoilers(msg: Any, partitions: str) -> list[tuple[str, Any]]:
    """One thing a scan must not call plain, added to a plain message whose first topic
    has a partition, each way: an error, and where the version has them a KIP-951
    `CurrentLeader` and `NodeEndpoints`."""
    module = sys.modules[type(msg).__module__]
    first = getattr(msg.responses[0], partitions)[0]
    error = ErrorCode.not_leader_or_follower
    out = [("error", with_first_partition(msg, partitions, error_code=error))]
    if hasattr(first, "current_leader"):
        leader = module.LeaderIdAndEpoch(leader_id=2, leader_epoch=5)
        out.append(("current leader", with_first_partition(msg, partitions, current_leader=leader)))
    if hasattr(msg, "node_endpoints"):
        endpoint = module.NodeEndpoint(node_id=2, host="b", port=9092, rack=None)
        out.append(("node endpoints", dataclasses.replace(msg, node_endpoints=(endpoint,))))
    return out


def assert_plain_only_whole(is_plain: IsPlain, frame: bytes, body: int, version: int) -> None:
    """A plain body is plain to its last byte and no further: cut short or lengthened by
    a byte it is not (the walker then judges it), cut short with a next frame's bytes
    after it neither; with them after it whole, it still is."""
    assert is_plain(frame, body, len(frame), version)
    assert is_plain(frame + AFTER, body, len(frame), version)
    assert not is_plain(frame[:-1], body, len(frame) - 1, version)
    assert not is_plain(frame[:-1] + AFTER, body, len(frame) - 1, version)
    longer = frame + b"\x00"
    assert not is_plain(longer, body, len(longer), version)


# Values a changed byte takes: the ends of a byte, of a one-byte varint, and of a sign.
CHANGED_BYTE_VALUES = (0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF)


def one_byte_changes(frame: bytes, body: int) -> Iterator[tuple[int, bytes]]:
    """(where, the frame) for every byte of the body set to each of CHANGED_BYTE_VALUES
    and to itself with its lowest bit flipped, where that changes it."""
    for at in range(body, len(frame)):
        for value in sorted({*CHANGED_BYTE_VALUES, frame[at] ^ 1} - {frame[at]}):
            yield at, frame[:at] + bytes((value,)) + frame[at + 1 :]


def changed_bytes(frame: bytes, body: int, changes: list[tuple[int, int]], cut: int) -> bytes:
    """`frame` cut short by -`cut` bytes or lengthened by `cut` zeros, then each (at,
    value) of `changes` written at `at`, wrapped into the body (none if nothing of the
    body is left)."""
    changed = bytearray(frame[:cut] if cut < 0 else frame + b"\x00" * cut)
    if len(changed) > body:
        for at, value in changes:
            changed[body + at % (len(changed) - body)] = value
    return bytes(changed)
