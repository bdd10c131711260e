"""Read and write whole messages by their generated layouts (`generated/layouts.py`).

Used where kproxy writes a response itself (a request refused by the listener's API
policy): the request is read into plain values, the response built from them and
written. Reading assumes a hostile peer: every length and count is checked against the
bytes left, and nothing is allocated ahead of the bytes that back it.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from kproxy.protocol.errors import MalformedMessage, ProtocolError
from kproxy.protocol.generated.layouts import LAYOUTS
from kproxy.protocol.primitives import encode_count, encode_string, encode_uvarint, read_uvarint

Layout = tuple[Any, ...]
Value = dict[str, Any]

_FIXED: dict[str, struct.Struct] = {
    "int8": struct.Struct(">b"),
    "bool": struct.Struct(">?"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
_ZERO_UUID = bytes(16)
_INT32 = struct.Struct(">i")
_DECODE_ERRORS = (struct.error, IndexError, ValueError, UnicodeDecodeError)


def layout_for(api_key: int, is_request: bool, version: int) -> Layout | None:
    return LAYOUTS.get((api_key, is_request, version))


# Where a struct read with `keep_tagged` keeps its tagged fields, as they came: no
# schema field starts with an underscore.
TAGGED: Final = "_tagged"


class LayoutReader:
    """Reads one message body into {field name: value}; tagged fields are skipped, or
    with `keep_tagged` kept whole under TAGGED (a message kproxy writes back keeps
    them: KIP-951's NodeEndpoints, a Fetch's ReplicaState).
    `max_elements`: array elements read in all, at most (ProtocolError `too_large`
    beyond: a small frame of tiny elements makes many Python objects). `views`: bytes
    and records are views of `buf`, not copies (a message written back at once: a
    megabyte of records is not copied to be copied again)."""

    def __init__(
        self,
        buf: memoryview,
        pos: int,
        flexible: bool,
        max_elements: int | None = None,
        keep_tagged: bool = False,
        views: bool = False,
    ) -> None:
        self.buf = buf
        self.pos = pos
        self.flexible = flexible
        self.elements_left = max_elements
        self.keep_tagged = keep_tagged
        self.views = views

    def read(self, layout: Layout) -> Value:
        try:
            return self._struct(layout)
        except _DECODE_ERRORS as exc:
            raise MalformedMessage(f"malformed request body: {exc}") from exc

    def _struct(self, layout: Layout) -> Value:
        fields, _tagged = layout
        out: Value = {}
        for name, typ, nullable, _default, _entity, _key, sub in fields:
            out[name] = self._value(typ, sub, nullable)
        if self.flexible:
            start = self.pos
            self._skip_tagged()
            if self.keep_tagged and self.pos - start > 1:
                out[TAGGED] = bytes(self.buf[start : self.pos])
        return out

    def _value(self, typ: str, sub: Layout | None, nullable: bool = False) -> Any:
        if typ.startswith("[]"):
            count = self._length(array=True)
            if count < 0:
                return None
            elem = typ[2:]
            # Every element takes at least one byte: a count beyond the bytes left is a lie.
            if count > len(self.buf) - self.pos:
                raise MalformedMessage(f"array of {count} elements in fewer bytes")
            if self.elements_left is not None:
                self.elements_left -= count
                if self.elements_left < 0:
                    raise ProtocolError("more array elements than kproxy reads", "too_large")
            if elem == "struct":
                assert sub is not None
                return [self._struct(sub) for _ in range(count)]
            return [self._value(elem, None) for _ in range(count)]
        if typ == "struct":
            assert sub is not None
            if nullable:  # a nullable struct starts with a presence byte: -1 for null
                present = _FIXED["int8"].unpack_from(self.buf, self.pos)[0]
                self.pos += 1
                if present < 0:
                    return None
            return self._struct(sub)
        codec = _FIXED.get(typ)
        if codec is not None:
            value = codec.unpack_from(self.buf, self.pos)[0]
            self.pos += codec.size
            return value
        if typ == "uuid":
            self._need(16)
            raw = bytes(self.buf[self.pos : self.pos + 16])
            self.pos += 16
            return raw
        size = self._length(array=False, wide=typ != "string")
        if size < 0:
            return None
        self._need(size)
        data = self.buf[self.pos : self.pos + size]
        self.pos += size
        if typ == "string":
            return str(data, "utf-8")
        return data if self.views else bytes(data)

    def _length(self, array: bool, wide: bool = True) -> int:
        if self.flexible:
            n, self.pos = read_uvarint(self.buf, self.pos)
            return n - 1
        codec = _FIXED["int32" if array or wide else "int16"]
        n = int(codec.unpack_from(self.buf, self.pos)[0])
        self.pos += codec.size
        return n

    def _need(self, size: int) -> None:
        if self.pos + size > len(self.buf):
            raise MalformedMessage("field runs past the end of the frame")

    def _skip_tagged(self) -> None:
        count, self.pos = read_uvarint(self.buf, self.pos)
        for _ in range(count):
            _tag, self.pos = read_uvarint(self.buf, self.pos)
            size, self.pos = read_uvarint(self.buf, self.pos)
            self._need(size)
            self.pos += size


class TooLarge(Exception):
    """The message being written would pass its byte budget."""


class LayoutWriter:
    """Writes {field name: value} by a layout; missing fields take their defaults.

    Tagged fields are written as a read kept them (TAGGED), else not at all (an empty
    tag buffer): every tagged field's default is its absence. `budget` caps the bytes
    written (TooLarge beyond it).
    """

    def __init__(self, flexible: bool, budget: int) -> None:
        self.flexible = flexible
        self.budget = budget
        self.parts: list[bytes | memoryview] = []
        self.size = 0

    def write(self, layout: Layout, value: Value, head: bytes | memoryview = b"") -> bytes:
        """The message, after `head` (a header written as it came)."""
        return b"".join(self.pieces(layout, value, head))

    def pieces(
        self, layout: Layout, value: Value, head: bytes | memoryview = b""
    ) -> list[bytes | memoryview]:
        """`write`'s bytes unjoined (`size` of them): views read by a reader's `views`
        stay views, to be sent as they are."""
        if head:
            self._put(head)
        self._struct(layout, value)
        return self.parts

    def _put(self, data: bytes | memoryview) -> None:
        self.size += len(data)
        if self.size > self.budget:
            raise TooLarge(f"more than {self.budget} bytes")
        self.parts.append(data)

    def _struct(self, layout: Layout, value: Value) -> None:
        fields, _tagged = layout
        for name, typ, nullable, default, _entity, _key, sub in fields:
            item = value.get(name, _MISSING)
            if item is _MISSING:
                item = default_value(typ, nullable, default, sub)
            self._value(typ, item, sub, nullable)
        if self.flexible:
            self._put(value.get(TAGGED, b"\x00"))

    def _value(self, typ: str, item: Any, sub: Layout | None, nullable: bool = False) -> None:
        if typ.startswith("[]"):
            if item is None:
                self._put(b"\x00" if self.flexible else b"\xff\xff\xff\xff")
                return
            self._put(encode_count(len(item), self.flexible))
            elem = typ[2:]
            for element in item:
                if elem == "struct":
                    assert sub is not None
                    self._struct(sub, element)
                else:
                    self._value(elem, element, None)
            return
        if typ == "struct":
            assert sub is not None
            if nullable:
                self._put(b"\xff" if item is None else b"\x01")
            if item is not None:
                self._struct(sub, item)
            return
        codec = _FIXED.get(typ)
        if codec is not None:
            self._put(codec.pack(item))
        elif typ == "uuid":
            self._put(item)
        elif typ == "string":
            self._put(encode_string(item, self.flexible))
        elif item is None:  # bytes, records
            self._put(b"\x00" if self.flexible else b"\xff\xff\xff\xff")
        else:  # the length and the bytes apart: the bytes are copied once, by write
            self._put(encode_uvarint(len(item) + 1) if self.flexible else _INT32.pack(len(item)))
            self._put(item)


_MISSING = object()


def default_value(typ: str, nullable: bool, default: Any, sub: Layout | None) -> Any:
    """A field's value when nothing sets it: the schema's default, else the type's zero."""
    if default == "null" and nullable:
        return None
    if typ.startswith("[]"):
        return []
    if typ == "struct":
        return {}
    if default is not None:
        return default
    if typ in _FIXED:
        return False if typ == "bool" else 0
    if typ == "uuid":
        return _ZERO_UUID
    if typ == "string":
        return ""
    return b""
