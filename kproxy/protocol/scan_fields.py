"""The array counts and lengths the response scans read (`kproxy.protocol.produce_scan`,
`kproxy.protocol.fetch_scan`), from ``bytes`` a byte at a time: compiled, each a native
byte read, where a struct call or a memoryview item would make objects."""

from __future__ import annotations

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.primitives import int16_at, int32_at, read_uvarint


def uvarint_at(buf: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint and the position after it: one byte below 128, as every count
    and length of a small response is, read here without `read_uvarint`'s loop."""
    value = buf[pos]
    if value < 0x80:
        return value, pos + 1
    return read_uvarint(buf, pos)


def count_at(buf: bytes, pos: int, flexible: bool, nullable: bool = False) -> tuple[int, int]:
    """An array's element count (compact in flexible versions) and the position after
    it; a null array counts 0 where null is allowed, and is malformed elsewhere. Its
    reads are inline, not calls: every response a scan reads has two counts or more."""
    if flexible:
        count = buf[pos]
        if count < 0x80:  # a one-byte varint: every count below 127
            pos += 1
        else:
            count, pos = read_uvarint(buf, pos)
        if count:
            return count - 1, pos
    else:
        count = buf[pos] << 24 | buf[pos + 1] << 16 | buf[pos + 2] << 8 | buf[pos + 3]
        pos += 4
        if count < 0x80000000:
            return count, pos
        if count != 0xFFFFFFFF:
            raise MalformedMessage("negative array count")
    if not nullable:
        raise MalformedMessage("null array")
    return 0, pos


def length_at(buf: bytes, pos: int, flexible: bool, string: bool) -> tuple[int, int]:
    """A string's (int16 before flexible versions) or byte field's (int32) length and the
    position after it, -1 for null; any other negative length is malformed."""
    if flexible:
        size, pos = uvarint_at(buf, pos)
        return size - 1, pos
    if string:
        size, pos = int16_at(buf, pos), pos + 2
    else:
        size, pos = int32_at(buf, pos), pos + 4
    if size < -1:
        raise MalformedMessage(f"bad length {size}")
    return size, pos


def past_topic(buf: bytes, pos: int, flexible: bool, topic_id: bool) -> int:
    """The position after a topic's TopicId (16 bytes, `topic_id`) or name; -1 for a null
    name, which is never valid (the walker then says so)."""
    if topic_id:
        return pos + 16
    size, pos = length_at(buf, pos, flexible, True)
    return -1 if size < 0 else pos + size
