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
    try:
        return _scan(buf, pos, stop, version) == stop
    except _FAILED:
        return False


def _scan(buf: bytes, pos: int, stop: int, version: int) -> int:
    """The end of a plain body, or -1 as soon as it is not plain."""
    flexible = version >= FLEXIBLE_FROM
    pos += 10 if version >= 7 else 4  # ThrottleTimeMs, ErrorCode, SessionId
    # Index, ErrorCode, HighWatermark, LastStableOffset, LogStartOffset (v5+)
    fixed = 4 + 2 + 8 + 8 + (8 if version >= 5 else 0)
    topics, pos = count_at(buf, pos, flexible)
    for _ in range(topics):
        pos = past_topic(buf, pos, flexible, version >= 13)  # TopicId from v13
        if pos < 0:
            return -1
        partitions, pos = count_at(buf, pos, flexible)
        for _ in range(partitions):
            if buf[pos + 4] or buf[pos + 5]:
                return -1  # an error (ErrorCode, after the partition's Index)
            pos += fixed
            aborted, pos = count_at(buf, pos, flexible, True)
            if not flexible:
                pos += 16 * aborted  # ProducerId, FirstOffset
            for _ in range(aborted if flexible else 0):
                pos = _tagged(buf, pos + 16, -1)
                if pos < 0 or pos > stop:
                    return -1
            if version >= 11:
                pos += 4  # PreferredReadReplica
            size, pos = length_at(buf, pos, flexible, False)
            if size > 0:
                pos += size  # Records: passed over
            if flexible:
                pos = _tagged(buf, pos, CURRENT_LEADER_TAG)
            if pos < 0 or pos > stop:
                return -1
        if flexible:
            pos = _tagged(buf, pos, -1)
        if pos < 0 or pos > stop:
            return -1
    if flexible:
        if buf[pos] != 0:
            return -1  # a top-level tagged field: NodeEndpoints, or one it might be
        pos += 1
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
