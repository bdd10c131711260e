"""Follow a response's structure as its bytes arrive, without keeping its records.

A large Fetch response is mostly record batches. To forward it while it arrives
(cut-through) kproxy still has to know where it is in the message: the partitions'
errors and KIP-951 `CurrentLeader` hints lie between the batches, and the only field
that may need rewriting, the top-level `NodeEndpoints` tagged field, comes after the
last batch. `ResponseSkim` follows the message's walk plan over any split of the bytes
and keeps a *skeleton*: every byte of the message except the contents of its
top-level-path byte fields (the record batches), whose length prefix becomes the null
marker. The skeleton is a valid message of the same version, so the ordinary walker
finds in it exactly what it would find in the whole frame.

It stops following at the message's top-level tagged fields: everything from there to
the end is the *tail*, kept whole and handed to the caller, which is the only part of
the frame that may have to change (`kproxy.protocol.tagged_fit`).

On the way it notes whether the body is *plain*: every ErrorCode the walker reports
(`R_ERROR`) is 0, no struct carries a tagged field the walker looks into (KIP-951's
`CurrentLeader`), and the tail holds no tagged field. A plain body tells the walker
nothing it would act on, so its walk may be skipped (`kproxy.session.streaming`), as a
plain Produce response's is (`kproxy.protocol.produce_scan`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.plan import Struct
from kproxy.protocol.plan_codes import (
    OP_ARRAY,
    OP_BYTES,
    OP_CARRAY,
    OP_CBYTES,
    OP_CSTR,
    OP_FIXED,
    OP_NSTRUCT,
    OP_STR,
    OP_STRUCT,
    R_ERROR,
)
from kproxy.protocol.primitives import INT16, INT32
from kproxy.protocol.walker import MAX_TAGGED_FIELDS, too_many_tagged_fields

# What the plan interpreter asks of the byte stream: n > 0 copies the next n bytes into
# the skeleton (it is sent back where they start), n < 0 passes over -n bytes.
_Ask = Generator[int, int, None]
_NULL_BYTES = {OP_CBYTES: b"\x00", OP_BYTES: b"\xff\xff\xff\xff"}
_i16 = INT16.unpack_from
_i32 = INT32.unpack_from


class ResponseSkim:
    """The skeleton of one response body, built from its bytes in any split."""

    __slots__ = (
        "_ask",
        "_copy",
        "_empty_tail",
        "_quiet",
        "_start",
        "_want",
        "in_tail",
        "skeleton",
        "tail_start",
    )

    def __init__(self, plan: Struct, header: bytes | memoryview) -> None:
        # The response header is kept as it is, so that skeleton offsets are frame offsets
        # up to the first elided byte field.
        self.skeleton = bytearray(header)
        self.in_tail = False
        self.tail_start = -1  # skeleton offset of the tail, once reached
        self._quiet = True  # no error and no interesting tagged field so far (see above)
        # A tail with no tagged field: their count 0, or nothing before flexible versions.
        self._empty_tail = b"" if plan[1] is None else b"\x00"
        self._ask = self._body(plan)
        self._want = 0
        self._copy = False
        self._start = 0
        self._next(next(self._ask))

    def _next(self, ask: int) -> None:
        self._copy = ask > 0
        self._want = ask if ask > 0 else -ask
        self._start = len(self.skeleton)

    def feed(self, data: memoryview) -> int:
        """Take the next bytes of the body; return how many of them come before the tail
        (those may be forwarded now). Bytes of the tail are kept."""
        if self.in_tail:
            self.skeleton += data
            return 0
        n = len(data)
        pos = 0
        while True:
            take = min(self._want, n - pos)
            if take:
                if self._copy:
                    self.skeleton += data[pos : pos + take]
                pos += take
                self._want -= take
            if self._want:
                return pos
            try:
                ask = self._ask.send(self._start)
            except StopIteration:
                self.in_tail = True
                self.tail_start = len(self.skeleton)
                self.skeleton += data[pos:]
                return pos
            self._next(ask)

    def passes_over(self, n: int) -> bool:
        """Whether the next `n` bytes all lie inside the byte field being passed over (a
        record batch set), short of its end: if so they are counted as fed, leaving the
        skim as `feed` would have (it would return `n`)."""
        if self._copy or self.in_tail or self._want <= n:
            return False
        self._want -= n
        return True

    def finish(self) -> None:
        """The frame's last byte was fed: it must have reached its tail (or its end)."""
        if not self.in_tail:
            raise MalformedMessage("response ends in the middle of a field")

    def plain(self) -> bool:
        """Whether the whole body, its last byte fed, is plain: quiet up to its tail (see
        above), and a tail without any tagged field (no KIP-951 `NodeEndpoints`)."""
        return self._quiet and self.skeleton[self.tail_start :] == self._empty_tail

    # -- the plan interpreter: yields what it needs, reads the copies from the skeleton ----
    def _uvarint(self) -> Generator[int, int, int]:
        value = shift = 0
        for _ in range(5):
            at = yield 1
            b = self.skeleton[at]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        raise MalformedMessage("varint longer than 5 bytes")

    def _length(self, op: int) -> Generator[int, int, int]:
        """A string's or byte field's length, -1 for null; below that it is refused, as
        the walker refuses it (a body the skim calls plain is not walked)."""
        if op in (OP_CSTR, OP_CBYTES):
            return (yield from self._uvarint()) - 1
        if op == OP_STR:
            n = int(_i16(self.skeleton, (yield 2))[0])
        else:
            n = int(_i32(self.skeleton, (yield 4))[0])
        if n < -1:
            raise MalformedMessage(f"bad length {n}")
        return n

    def _body(self, plan: Struct) -> _Ask:
        # The top-level fields only: the tagged fields after them are the tail.
        for f in plan[0]:
            yield from self._field(f)

    def _struct(self, plan: Struct) -> _Ask:
        fixed = 0
        error_at = -1  # where the run's ErrorCode lies in it
        for f in plan[0]:
            if f[0] == OP_FIXED:  # runs of fixed-width fields are asked for at once
                if f[1] == R_ERROR:
                    if error_at >= 0:  # a second one: the run so far first
                        yield from self._fixed(fixed, error_at)
                        fixed = 0
                    error_at = fixed
                fixed += f[2]
                continue
            if fixed:
                yield from self._fixed(fixed, error_at)
                fixed = 0
                error_at = -1
            yield from self._field(f)
        if fixed:
            yield from self._fixed(fixed, error_at)
        tagged = plan[1]
        if tagged is not None:  # tagged fields: small, copied whole
            count = yield from self._uvarint()
            if count > MAX_TAGGED_FIELDS:  # the walker's bound, walked or not
                raise too_many_tagged_fields(count)
            for _ in range(count):
                field = tagged.get((yield from self._uvarint()))
                if field is not None and field[4]:
                    self._quiet = False  # one the walker looks into (CurrentLeader)
                size = yield from self._uvarint()
                if size:
                    yield size

    def _fixed(self, n: int, error_at: int) -> _Ask:
        """A run of `n` bytes of fixed-width fields, an ErrorCode (int16) `error_at`
        bytes into it unless that is -1."""
        at = yield n
        if error_at >= 0 and (self.skeleton[at + error_at] or self.skeleton[at + error_at + 1]):
            self._quiet = False

    def _field(self, f: tuple[Any, ...]) -> _Ask:
        op, arg = f[0], f[2]
        if op == OP_FIXED:  # a top-level field: those in structs come in runs (_struct)
            yield from self._fixed(int(arg), 0 if f[1] == R_ERROR else -1)
        elif op in (OP_STR, OP_CSTR):
            n = yield from self._length(op)
            if n > 0:
                yield n
        elif op in (OP_BYTES, OP_CBYTES):
            at = len(self.skeleton)
            n = yield from self._length(op)
            if n > 0:
                # The skeleton says null: its walk skips the field as it would the bytes
                # (the walker reads no byte field), and no copy of them is kept. Byte
                # fields inside tagged fields are never reached: those are copied whole.
                del self.skeleton[at:]
                self.skeleton += _NULL_BYTES[op]
                yield -n
        elif op == OP_STRUCT:
            yield from self._struct(arg)
        elif op == OP_NSTRUCT:
            at = yield 1
            if self.skeleton[at] < 0x80:  # int8 marker: negative means null
                yield from self._struct(arg)
        else:
            yield from self._array(op, arg)

    def _array(self, op: int, arg: tuple[Any, ...]) -> _Ask:
        if op == OP_CARRAY:
            n = (yield from self._uvarint()) - 1
        elif op == OP_ARRAY:
            n = int(_i32(self.skeleton, (yield 4))[0])
        else:
            raise AssertionError(f"unknown plan op {op}")
        if n < 0:
            if n == -1:
                return
            raise MalformedMessage(f"bad array length {n}")
        elem_op, elem = arg
        if elem_op == OP_FIXED:
            if n:
                yield n * int(elem)
            return
        for _ in range(n):
            if elem_op == -1:
                yield from self._struct(elem)
            else:
                m = yield from self._length(elem_op)
                if m > 0:
                    yield m
