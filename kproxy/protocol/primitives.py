"""Kafka wire primitives: fixed-width integers, varints, strings (docs/protocol.md §4)."""

from __future__ import annotations

import struct
from typing import Final

from kproxy.protocol.errors import MalformedMessage

INT8: Final = struct.Struct(">b")
INT16: Final = struct.Struct(">h")
INT32: Final = struct.Struct(">i")
INT64: Final = struct.Struct(">q")
UINT16: Final = struct.Struct(">H")

read_int8: Final = INT8.unpack_from
read_int16: Final = INT16.unpack_from
read_int32: Final = INT32.unpack_from
read_uint16: Final = UINT16.unpack_from


# The fast lane's reads of a few header fields from a read's `bytes`: compiled, indexing
# bytes and shifting are machine operations, where a struct call builds a tuple of objects.
def int16_at(data: bytes, pos: int) -> int:
    """The big-endian int16 at `pos` (IndexError past the end)."""
    value: int = data[pos] << 8 | data[pos + 1]
    return value - 0x10000 if value >= 0x8000 else value


def int16_in(buf: bytes | memoryview, pos: int) -> int:
    """`int16_at` for a memoryview too (IndexError past the end).

    `int16_at` takes `bytes` only: compiled, its indexing is then a native byte read,
    which the fast lane's header reads rely on; a union indexes generically.
    """
    value: int = buf[pos] << 8 | buf[pos + 1]
    return value - 0x10000 if value >= 0x8000 else value


def int32_at(data: bytes, pos: int) -> int:
    """The big-endian int32 at `pos` (IndexError past the end)."""
    value: int = data[pos] << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]
    return value - 0x100000000 if value >= 0x80000000 else value


def read_uvarint(buf: memoryview | bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned LEB128 varint of at most 5 bytes (a uint32); return (value, next pos)."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise MalformedMessage("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise MalformedMessage("varint longer than 5 bytes")


def encode_uvarint(value: int) -> bytes:
    if value < 0:
        raise ValueError("unsigned varint cannot be negative")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_string(value: str | None, compact: bool) -> bytes:
    """A (nullable) string, classic (int16 length) or compact (uvarint length + 1)."""
    if value is None:
        return b"\x00" if compact else INT16.pack(-1)
    raw = value.encode("utf-8")
    if compact:
        return encode_uvarint(len(raw) + 1) + raw
    if len(raw) > 0x7FFF:
        raise ValueError("string too long for an int16 length")
    return INT16.pack(len(raw)) + raw


def encode_count(count: int, compact: bool) -> bytes:
    """An array length, classic (int32) or compact (uvarint count + 1)."""
    return encode_uvarint(count + 1) if compact else INT32.pack(count)
