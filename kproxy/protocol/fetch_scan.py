"""A cheap exact test that a whole Fetch response has nothing for kproxy to act on.

Almost every Fetch response a consumer gets says only "here are your records": every
partition with ErrorCode 0, no KIP-951 `CurrentLeader` (sent with NOT_LEADER_OR_FOLLOWER
or FENCED_LEADER_EPOCH) and no `NodeEndpoints`. Such a response carries no address and
no leadership, so its walk (a generic interpreter of the message's layout) can be
skipped: this scan reads the few fields that decide it and passes over the rest. A large
response forwarded while it arrives makes the same decision from its skim
(`kproxy.protocol.skim`, `ResponseSkim.plain`); this is that decision for one gathered
whole, and "plain" means the same in both: the partitions' ErrorCodes (the only ones
the walker reports) are 0, no partition carries a `CurrentLeader` (the only tagged
field below the top the walker looks into; others, such as `DivergingEpoch`, are passed
over), and the top level has no tagged field at all.

The scan reads ``bytes``, each field a byte at a time, as
`kproxy.protocol.produce_scan` does. It answers True only when it has read the whole
body, to its last byte, and found that shape, within the walker's bound on tagged
fields; anything else (an error, a hint, a size that does not add up, a version it does
not know) is False, and the walker then reads the response as always, malformed ones
included. Like the skim, it does not check what only the walk reads: a topic name that
is not UTF-8 passes (to a client, unchanged) where the walk would refuse it. The tests
hold it to that against kio and changed bytes (tests/property/test_fetch_scan.py).

Fetch response layout (versions 4-18; flexible from 12):
``ThrottleTimeMs i32, ErrorCode i16 (v7+), SessionId i32 (v7+), Responses: [Topic
(v4-12) | TopicId (v13+), Partitions: [Index i32, ErrorCode i16, HighWatermark i64,
LastStableOffset i64, LogStartOffset i64 (v5+), AbortedTransactions: nullable
[ProducerId i64, FirstOffset i64, tagged], PreferredReadReplica i32 (v11+), Records
nullable bytes, tagged (DivergingEpoch 0, CurrentLeader 1, SnapshotId 2)], tagged],
tagged (NodeEndpoints 0, v16+)``.
"""

from __future__ import annotations

from typing import Final

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.primitives import read_uvarint
from kproxy.protocol.scan_fields import count_at, length_at, past_topic, uvarint_at
from kproxy.protocol.walker import MAX_TAGGED_FIELDS

FIRST_VERSION: Final = 4
LAST_VERSION: Final = 18
FLEXIBLE_FROM: Final = 12
# KIP-951: the partition's tagged field the walker reads.
CURRENT_LEADER_TAG: Final = 1
_FAILED: Final = (IndexError, MalformedMessage)


def fetch_response_is_plain(buf: bytes, pos: int, stop: int, version: int) -> bool:
    """True when the Fetch response body from ``pos`` to ``stop`` of ``buf`` has no
    partition error, no `CurrentLeader` and no top-level tagged field.

    The scan reads each byte before it moves past it, so one that ends exactly at
    ``stop`` read nothing beyond it (in a read of several frames, the next one); and it
    gives up once it is past ``stop``, so a count no body could hold costs no more than
    the body's length."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        return False
    pos += 10 if version >= 7 else 4  # ThrottleTimeMs, ErrorCode, SessionId
    # One function down to the partitions, not two: a call is most of a field's cost in
    # pure Python, and this runs for every small Fetch response.
    try:
        if version < FLEXIBLE_FROM:
            return _topics(buf, pos, stop, version) == stop
        pos = _flexible_topics(buf, pos, stop, version >= 13)  # TopicId from v13
        # No top-level tagged field (NodeEndpoints, or one it might be), and the body's
        # last byte.
        return pos >= 0 and buf[pos] == 0 and pos + 1 == stop
    except _FAILED:
        return False


def _topics(buf: bytes, pos: int, stop: int, version: int) -> int:
    """The Responses of a version before the flexible ones (4-11, older clients): the
    position after them, or -1. Its counts and lengths are read by
    `kproxy.protocol.scan_fields`, which raises for a count or length below -1, or -1
    where null is not allowed: not plain (the walker refuses the one, reads the other as
    empty: it decides). Inline reads, as `_flexible_topics` has, would save 0.45 us of
    2.0 for three partitions."""
    # Index, ErrorCode, HighWatermark, LastStableOffset, LogStartOffset (v5+)
    fixed = 4 + 2 + 8 + 8 + (8 if version >= 5 else 0)
    replica = 4 if version >= 11 else 0  # PreferredReadReplica
    topics, pos = count_at(buf, pos, False)
    for _ in range(topics):
        pos = past_topic(buf, pos, False, False)
        if pos < 0:
            return -1
        partitions, pos = count_at(buf, pos, False)
        for _ in range(partitions):
            if buf[pos + 4] or buf[pos + 5]:
                return -1  # an error (ErrorCode, after the partition's Index)
            aborted, pos = count_at(buf, pos + fixed, False, True)
            size, pos = length_at(buf, pos + 16 * aborted + replica, False, False)
            if size > 0:
                pos += size  # Records: passed over
            if pos > stop:
                return -1
    return pos


def _flexible_topics(buf: bytes, pos: int, stop: int, topic_ids: bool) -> int:
    """The Responses of a flexible version (12+, what current consumers send): the
    position after them, or -1. A partition's fields are read inline, a call left
    only for a varint of more than two bytes, aborted transactions or a tagged field
    present: this runs for every partition of every small Fetch response, and a call is
    most of a field's cost in pure Python."""
    # Each count inline when it is a one-byte compact count of at least one element, as
    # `kproxy.protocol.produce_scan` reads them; else `count_at`, which raises for a null
    # array (not the shape skipped, though the walk reads it as empty).
    topics = buf[pos] - 1
    if 0 <= topics < 0x7F:
        pos += 1
    else:
        topics, pos = count_at(buf, pos, True)
    for _ in range(topics):
        if topic_ids:
            pos += 16
        else:
            pos = past_topic(buf, pos, True, False)
            if pos < 0:
                return -1
        partitions = buf[pos] - 1
        if 0 <= partitions < 0x7F:
            pos += 1
        else:
            partitions, pos = count_at(buf, pos, True)
        for _ in range(partitions):
            if buf[pos + 4] or buf[pos + 5]:
                return -1  # an error (ErrorCode, after the partition's Index)
            # Index, ErrorCode, HighWatermark, LastStableOffset, LogStartOffset: 30 bytes;
            # then AbortedTransactions, null (0) or empty (1) unless a transaction
            # aborted, and PreferredReadReplica: the Records' length at 35 in the
            # commonest case. Offsets are added once each: an addition is an opcode.
            if buf[pos + 30] < 2:
                pos += 35
            else:
                pos = _aborted(buf, pos + 30, stop)
                if pos < 0:
                    return -1
                pos += 4
            # Records: a compact nullable length, one more than the size (0: null),
            # passed over with the records: one byte below 127 bytes of records, two
            # below 16 KiB. `or 1`: a null (or an overlong zero) skips no records.
            size = buf[pos]
            if size < 0x80:
                pos += size or 1
            elif (high := buf[pos + 1]) < 0x80:
                pos += ((size & 0x7F | high << 7) or 1) + 1
            else:
                size, pos = read_uvarint(buf, pos)
                pos += (size or 1) - 1
            if buf[pos]:
                pos = _tagged(buf, pos, CURRENT_LEADER_TAG)
                if pos < 0:
                    return -1
            else:  # the commonest case by far: no tagged field
                pos += 1
            if pos > stop:
                return -1
        if buf[pos] == 0:
            pos += 1
        else:
            pos = _tagged(buf, pos, -1)
        if pos < 0 or pos > stop:
            return -1
    return pos


def _aborted(buf: bytes, pos: int, stop: int) -> int:
    """Past a flexible version's AbortedTransactions that holds some: -1 when it does
    not add up."""
    aborted, pos = count_at(buf, pos, True, True)
    for _ in range(aborted):
        pos = _tagged(buf, pos + 16, -1)  # ProducerId, FirstOffset, tagged fields
        if pos < 0 or pos > stop:
            return -1
    return pos


def _tagged(buf: bytes, pos: int, unwanted: int) -> int:
    """Pass over a struct's tagged fields: the position after them, or -1 when one has
    the tag `unwanted` (or there are more than the walker accepts)."""
    if buf[pos] == 0:  # the commonest case by far: no tagged field
        return pos + 1
    count, pos = uvarint_at(buf, pos)
    if count > MAX_TAGGED_FIELDS:
        return -1
    for _ in range(count):
        tag, pos = uvarint_at(buf, pos)
        if tag == unwanted:
            return -1
        size, pos = uvarint_at(buf, pos)
        pos += size
    return pos
