"""Fit a rewritten tagged-field section into the length the frame already announced.

A streamed response's size prefix left kproxy before its last bytes arrived, so the
rewrite of its tail (a Fetch response's top-level tagged fields, where KIP-951 puts
`NodeEndpoints`) must keep the tail's length:

* the same length: sent as it is;
* shorter: a padding field is added with a tag no Kafka message defines
  (`PADDING_TAG`). KIP-482 makes every reader skip a tagged field it does not know
  (Kafka's generated readers keep it as an unknown field, librdkafka skips it), so the
  client reads exactly the rewritten fields;
* longer, or too short to pad (one or two bytes): the endpoint fields are dropped and the
  rest padded. That fails closed: no address is lost into the stream, and a client
  given a `CurrentLeader` without its endpoint refreshes its metadata, as it would for a
  leader it never heard of (KIP-951). The caller counts it.

The same padding covers bytes a broker sent after the message, which belong to no field
and so are never rewritten (`cover_after`): where no padding fits (one or two bytes, or
a version without tagged fields), they become zeros, which every reader leaves unread
as it left the bytes they replace.
"""

from __future__ import annotations

from collections.abc import Collection

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.primitives import encode_uvarint, read_uvarint

# The largest tag of two varint bytes: far above any tag Kafka's schemas use (they count
# up from 0, a few per struct), so no client can mistake the padding for a field it knows.
PADDING_TAG = 0x3FFF

TaggedField = tuple[int, bytes]


def parse_tagged(section: bytes | bytearray | memoryview) -> list[TaggedField]:
    """A tagged-field section (count, then tag, size, data each) that fills `section`."""
    view = memoryview(section)
    try:
        count, pos = read_uvarint(view, 0)
        if count > len(view):
            raise MalformedMessage(f"{count} tagged fields cannot fit in {len(view)} bytes")
        fields: list[TaggedField] = []
        for _ in range(count):
            tag, pos = read_uvarint(view, pos)
            size, pos = read_uvarint(view, pos)
            if pos + size > len(view):
                raise MalformedMessage("tagged field runs past the end of the message")
            fields.append((tag, bytes(view[pos : pos + size])))
            pos += size
    except IndexError as exc:
        raise MalformedMessage("truncated tagged fields") from exc
    if pos != len(view):
        raise MalformedMessage(f"{len(view) - pos} bytes after the last tagged field")
    return fields


def _padding(room: int, tag: int) -> bytes | None:
    """One padding field of exactly `room` bytes, if one exists."""
    head = encode_uvarint(tag)
    for size_bytes in range(1, 6):
        data = room - len(head) - size_bytes
        if data >= 0 and len(encode_uvarint(data)) == size_bytes:
            return head + encode_uvarint(data) + bytes(data)
    return None


def _padded(fields: list[TaggedField], length: int) -> bytes | None:
    """`fields` and one padding field (two where one cannot be that size: a varint's
    width leaves gaps), `length` bytes in all, or None."""
    if any(tag >= PADDING_TAG - 1 for tag, _ in fields):
        return None  # the padding must come last: tags ascend (KIP-482)
    body = b"".join(encode_uvarint(t) + encode_uvarint(len(d)) + d for t, d in fields)
    for pads in (1, 2):
        room = length - len(encode_uvarint(len(fields) + pads)) - len(body)
        first = b"" if pads == 1 else encode_uvarint(PADDING_TAG - 1) + b"\x00"
        rest = _padding(room - len(first), PADDING_TAG)
        if rest is not None:
            return encode_uvarint(len(fields) + pads) + body + first + rest
    return None


def fit_tagged(
    rewritten: bytes | bytearray | memoryview, length: int, endpoint_tags: Collection[int]
) -> tuple[bytes, str]:
    """The rewritten section made exactly `length` bytes long, and how: "rewritten"
    (it already was), "padded", or "dropped" (its endpoint fields removed)."""
    if len(rewritten) == length:
        return bytes(rewritten), "rewritten"
    fields = parse_tagged(rewritten)
    fitted = _padded(fields, length)
    if fitted is not None:
        return fitted, "padded"
    fitted = _padded([f for f in fields if f[0] not in endpoint_tags], length)
    if fitted is None:
        raise MalformedMessage("a streamed response's tail cannot be kept at its length")
    return fitted, "dropped"


def cover_after(section: bytes | bytearray | memoryview, length: int) -> bytes:
    """A message's last tagged-field section (empty before flexible versions), made
    `length` bytes long over the bytes that came after it: padded, or else followed
    by zeros."""
    if section:
        padded = _padded(parse_tagged(section), length)
        if padded is not None:
            return padded
    return bytes(section) + bytes(length - len(section))
