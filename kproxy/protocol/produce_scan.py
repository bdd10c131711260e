"""A cheap exact test that a Produce response has nothing for kproxy to act on.

Almost every Produce response says only "appended": every partition with ErrorCode 0,
no RecordErrors, no ErrorMessage, and, since v10 (KIP-951), no `CurrentLeader` and no
`NodeEndpoints`, which are tagged fields sent only with NOT_LEADER_OR_FOLLOWER or
FENCED_LEADER_EPOCH. Such a response carries no address and no leadership, so the walk
(a generic interpreter of the message's layout) can be skipped: this scan reads the few
fields that decide it at their fixed offsets.

The scan reads ``bytes``, each field a byte at a time: indexing ``bytes`` makes no
object (in the mypyc build no call at all), where a memoryview's item or a struct
unpack makes a Python int or a tuple per field. A topic's name is read inline, not by
a call (`kproxy.protocol.scan_fields.length_at`): in pure Python a call per field cost
the small produce round trip 9% more instructions.

It answers True only when it has read the whole body, to its last byte, and found
exactly that shape; anything else (an error, a record error, an error message, any
tagged field, a size that does not add up, a version it does not know) is False, and
the walker then reads the response as always, malformed ones included. The tests hold
it to that against kio (tests/property/test_produce_scan.py).

Produce response layout (versions 3-13; flexible from 9):
``[Responses: [Name (v3-12) | TopicId (v13+), [Index i32, ErrorCode i16,
BaseOffset i64, LogAppendTimeMs i64, LogStartOffset i64 (v5+), RecordErrors (v8+),
ErrorMessage (v8+), tagged (CurrentLeader v10+)], tagged], ThrottleTimeMs i32,
tagged (NodeEndpoints v10+)]``.
"""

from __future__ import annotations

from typing import Final

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.primitives import read_uvarint
from kproxy.protocol.scan_fields import count_at, past_topic

FIRST_VERSION: Final = 3
LAST_VERSION: Final = 13
FLEXIBLE_FROM: Final = 9
_FAILED: Final = (IndexError, MalformedMessage)


def produce_response_is_plain(buf: bytes, pos: int, stop: int, version: int) -> bool:
    """True when the Produce response body from ``pos`` to ``stop`` of ``buf`` carries
    no error, no record error, no error message and no tagged field at all.

    The scan reads each byte before it moves past it, so one that ends exactly at
    ``stop`` read nothing beyond it (in a read of several frames, the next one)."""
    if not FLEXIBLE_FROM <= version <= LAST_VERSION:
        return FIRST_VERSION <= version < FLEXIBLE_FROM and _before_flexible(
            buf, pos, stop, version
        )
    # The flexible versions (every current producer's): their scan is this function's
    # body, not a helper the try wraps, a call less for every Produce response in pure
    # Python; and each test written once for them, not asked again per partition.
    try:
        # Each count read inline when it is a one-byte compact count of at least one
        # element (every small response's), else by count_at: a call in pure Python.
        topics = buf[pos] - 1
        if 0 <= topics < 0x7F:
            pos += 1
        else:
            topics, pos = count_at(buf, pos, True)
        topic_ids = version >= 13
        for _ in range(topics):
            if topic_ids:
                pos += 16  # TopicId
            else:
                # Name: a compact string, its length plus one (0: null, never valid: the
                # walker says so).
                size = buf[pos]
                if size >= 0x80:
                    size, pos = read_uvarint(buf, pos)
                    pos -= 1
                if not size:
                    return False
                pos += size
            partitions = buf[pos] - 1
            if 0 <= partitions < 0x7F:
                pos += 1
            else:
                partitions, pos = count_at(buf, pos, True)
            for _ in range(partitions):
                # ErrorCode after the partition's Index; after Index, ErrorCode,
                # BaseOffset, LogAppendTimeMs and LogStartOffset (30 bytes): RecordErrors
                # empty (count 0 + 1), ErrorMessage null (0), and no tagged field (0):
                # CurrentLeader absent.
                if buf[pos + 4] or buf[pos + 5] or buf[pos + 30] != 1:
                    return False
                if buf[pos + 31] or buf[pos + 32]:
                    return False
                pos += 33
            if buf[pos]:
                return False  # a topic-level tagged field
            pos += 1
        pos += 4  # ThrottleTimeMs
        # No top-level tagged field (NodeEndpoints), and the body's last byte.
        return buf[pos] == 0 and pos + 1 == stop
    except _FAILED:
        return False


def _before_flexible(buf: bytes, pos: int, stop: int, version: int) -> bool:
    """`produce_response_is_plain` for versions 3-8 (older clients)."""
    try:
        # Index, ErrorCode, BaseOffset, LogAppendTimeMs, LogStartOffset (v5+)
        fixed = 4 + 2 + 8 + 8 + (8 if version >= 5 else 0)
        topics, pos = count_at(buf, pos, False)
        for _ in range(topics):
            pos = past_topic(buf, pos, False, False)
            if pos < 0:
                return False  # a null name (never valid): let the walker say so
            partitions, pos = count_at(buf, pos, False)
            for _ in range(partitions):
                if buf[pos + 4] or buf[pos + 5]:
                    return False  # an error (ErrorCode, after the partition's Index)
                pos += fixed
                if version >= 8:
                    # RecordErrors empty (int32 0), ErrorMessage null (int16 -1).
                    if buf[pos] or buf[pos + 1] or buf[pos + 2] or buf[pos + 3]:
                        return False
                    if buf[pos + 4] != 0xFF or buf[pos + 5] != 0xFF:
                        return False
                    pos += 6
        return pos + 4 == stop  # ThrottleTimeMs
    except _FAILED:
        return False
