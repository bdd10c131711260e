"""Find broker endpoints and partition leadership in a message, without decoding it.

The walker follows a message's generated plan over the raw bytes. Fields nobody asked
about are skipped by their length (record batches included: they are never copied or
decoded); tagged fields with nothing of interest inside are skipped by their size.
What it finds is reported as values plus the byte spans the rewriter needs.
"""

from __future__ import annotations

import struct
from typing import Any

from kproxy.protocol.errors import MalformedMessage, UnsupportedVersion
from kproxy.protocol.found import (
    ArraySpan,
    ConfigEntry,
    Endpoint,
    LeaderObservation,
    TaggedSpan,
    WalkResult,
)
from kproxy.protocol.plan import Struct, plan_for
from kproxy.protocol.plan_codes import (
    K_CONFIG,
    K_ENDPOINT,
    K_INLINE,
    K_PARTITION,
    OP_BYTES,
    OP_CARRAY,
    OP_CBYTES,
    OP_CSTR,
    OP_FIXED,
    OP_NSTRUCT,
    OP_STR,
    OP_STRUCT,
    R_CONFIG_NAME,
    R_CONFIG_VALUE,
    R_ERROR,
    R_HINT_LEADER_EPOCH,
    R_HINT_LEADER_ID,
    R_HOST,
    R_LEADER_EPOCH,
    R_LEADER_ID,
    R_LISTENER,
    R_NODE_ID,
    R_PARTITION,
    R_PORT,
    R_RACK,
    R_SENSITIVE,
    R_TOPIC_ID,
    R_TOPIC_NAME,
)
from kproxy.protocol.primitives import read_uvarint

_i8 = struct.Struct(">b").unpack_from
_i16 = struct.Struct(">h").unpack_from
_u16 = struct.Struct(">H").unpack_from
_i32 = struct.Struct(">i").unpack_from
_i64 = struct.Struct(">q").unpack_from

_ERROR_POS = 100  # vals key: where an endpoint struct's ErrorCode sits
_MAX_DEPTH = 16  # Kafka messages nest at most a few levels; deeper input is hostile
# Caps on what one message may make the walker allocate, from what real clusters send:
# a request names at most a node's listeners (a handful; AddRaftVoter), a response at
# most every broker or voter of a cluster (Metadata, DescribeQuorum: hundreds, at most
# thousands). A struct has at most a few tagged fields (Kafka's schemas define fewer
# than ten per struct); unknown future ones are kept, but not without limit.
MAX_REQUEST_ENDPOINTS = 1024
MAX_RESPONSE_ENDPOINTS = 10_000
MAX_TAGGED_FIELDS = 64

__all__ = [
    "MAX_REQUEST_ENDPOINTS",
    "MAX_RESPONSE_ENDPOINTS",
    "MAX_TAGGED_FIELDS",
    "ArraySpan",
    "ConfigEntry",
    "Endpoint",
    "LeaderObservation",
    "TaggedSpan",
    "WalkResult",
    "can_walk",
    "too_many_tagged_fields",
    "walk",
]


def too_many_tagged_fields(count: int) -> MalformedMessage:
    """The refusal of a struct with more than MAX_TAGGED_FIELDS tagged fields."""
    return MalformedMessage(
        f"{count} tagged fields in one struct (at most {MAX_TAGGED_FIELDS})",
        reason="too_many_tagged_fields",
    )


def can_walk(api_key: int, version: int, is_request: bool) -> bool:
    return plan_for(api_key, is_request, version) is not None


def walk(
    frame: memoryview | bytes,
    body_offset: int,
    api_key: int,
    version: int,
    is_request: bool,
    max_endpoints: int = MAX_RESPONSE_ENDPOINTS,
) -> WalkResult:
    """Walk the message body that starts at `body_offset` of `frame`.

    Offsets in the result are offsets into `frame`. Raises only ProtocolError.
    """
    plan = plan_for(api_key, is_request, version)
    if plan is None:
        raise UnsupportedVersion(
            f"no walk plan for api {api_key} v{version} {'request' if is_request else 'response'}"
        )
    buf = memoryview(frame)
    walker = _Walker(buf, max_endpoints)
    try:
        end = walker.struct(plan, body_offset, len(buf), None, None, None, None, -1, None, 0)
    # Only what bad bytes can cause: a fixed-width read past the end (struct.error) or a
    # string that is not UTF-8. Anything else is a bug in kproxy or its plans, and must
    # surface as one rather than be blamed on the peer.
    except (struct.error, UnicodeDecodeError) as exc:
        raise MalformedMessage(f"malformed api {api_key} v{version} message: {exc}") from exc
    if end > len(buf):
        raise MalformedMessage("message runs past the end of its frame")
    return WalkResult(walker.endpoints, walker.leaders, end, walker.configs)


class _Walker:
    __slots__ = ("buf", "configs", "endpoints", "leaders", "max_endpoints", "tagged")

    def __init__(self, buf: memoryview, max_endpoints: int) -> None:
        self.buf = buf
        self.max_endpoints = max_endpoints
        self.configs: list[ConfigEntry] = []
        self.endpoints: list[Endpoint] = []
        self.leaders: list[LeaderObservation] = []
        self.tagged: list[TaggedSpan] = []

    def _string(self, pos: int, end: int, compact: bool) -> tuple[str | None, int, int]:
        """Return (value, start of characters, end)."""
        buf = self.buf
        if compact:
            n, p = read_uvarint(buf, pos)
            n -= 1
        else:
            n = _i16(buf, pos)[0]
            p = pos + 2
        if n < 0:
            if n == -1:
                return None, p, p
            raise MalformedMessage(f"bad string length {n}")
        if n > end - p:
            raise MalformedMessage("string runs past the end of the message")
        return bytes(buf[p : p + n]).decode("utf-8"), p, p + n

    def struct(
        self,
        plan: Struct,
        pos: int,
        end: int,
        topic: str | None,
        topic_id: bytes | None,
        node: int | None,
        shared: dict[int, Any] | None,
        elem_start: int,
        array: ArraySpan | None,
        depth: int,
    ) -> int:
        if depth > _MAX_DEPTH:
            raise MalformedMessage("message nests too deeply")
        buf = self.buf
        fields, tagged, kind, path, _interesting, _fixed = plan
        vals: dict[int, Any] | None
        if kind & K_INLINE:
            vals = shared
        elif kind:
            vals = {}
        else:
            vals = None
        start = pos
        for f in fields:
            pos = self.field(f, pos, end, vals, topic, topic_id, node, depth)
        if tagged is not None:
            count, pos = read_uvarint(buf, pos)
            if count > MAX_TAGGED_FIELDS:
                raise too_many_tagged_fields(count)
            for _ in range(count):
                tag, pos = read_uvarint(buf, pos)
                size_start = pos
                size, pos = read_uvarint(buf, pos)
                vend = pos + size
                if vend > end:
                    raise MalformedMessage("tagged field runs past the end of the message")
                f = tagged.get(tag)
                if f is not None and f[4]:
                    self.tagged.append(TaggedSpan(size_start, pos, pos, vend))
                    got = self.field(f, pos, vend, vals, topic, topic_id, node, depth)
                    self.tagged.pop()
                    if got != vend:
                        raise MalformedMessage(f"tagged field {tag} has the wrong size")
                pos = vend
        if pos > end:
            raise MalformedMessage("struct runs past the end of the message")
        if vals is None or kind & K_INLINE:
            return pos
        if kind & K_ENDPOINT:
            if len(self.endpoints) >= self.max_endpoints:
                raise MalformedMessage(
                    f"more than {self.max_endpoints} endpoints in one message",
                    reason="too_many_endpoints",
                )
            host = vals[R_HOST]
            port = vals[R_PORT]
            self.endpoints.append(
                Endpoint(
                    path,
                    vals.get(R_NODE_ID, node),
                    vals.get(R_LISTENER),
                    host[0],
                    port[0],
                    vals.get(R_RACK),
                    host[3],
                    port[2],
                    host[1],
                    host[2],
                    port[1],
                    elem_start if elem_start >= 0 else start,
                    pos,
                    array,
                    vals.get(_ERROR_POS),
                    tuple(self.tagged),
                )
            )
        if kind & K_CONFIG:
            value = vals[R_CONFIG_VALUE]
            self.configs.append(
                ConfigEntry(
                    vals[R_CONFIG_NAME] or "",
                    value[0],
                    value[1],
                    value[2],
                    value[3],
                    vals.get(R_SENSITIVE),
                )
            )
        if kind & K_PARTITION:
            if R_LEADER_ID in vals or R_LEADER_EPOCH in vals:
                leader_id = vals.get(R_LEADER_ID)
                leader_epoch = vals.get(R_LEADER_EPOCH)
                hint = False
            else:
                leader_id = vals.get(R_HINT_LEADER_ID)
                leader_epoch = vals.get(R_HINT_LEADER_EPOCH)
                hint = leader_id is not None or leader_epoch is not None
            self.leaders.append(
                LeaderObservation(
                    vals.get(R_TOPIC_NAME, topic),
                    vals.get(R_TOPIC_ID, topic_id),
                    vals[R_PARTITION],
                    vals.get(R_ERROR),
                    leader_id,
                    leader_epoch,
                    hint,
                )
            )
        return pos

    def field(
        self,
        f: tuple[Any, ...],
        pos: int,
        end: int,
        vals: dict[int, Any] | None,
        topic: str | None,
        topic_id: bytes | None,
        node: int | None,
        depth: int,
    ) -> int:
        buf = self.buf
        op, role, arg, _name, _interesting = f
        value: Any
        if op == OP_FIXED:
            if role and vals is not None:
                if role == R_PORT:
                    value = (_u16(buf, pos)[0] if arg == 2 else _i32(buf, pos)[0], pos, arg)
                elif role == R_SENSITIVE:
                    if pos >= end:
                        raise MalformedMessage("truncated configuration entry")
                    value = pos
                elif arg == 4:
                    value = _i32(buf, pos)[0]
                elif arg == 2:
                    value = _i16(buf, pos)[0]
                    if role == R_ERROR:
                        vals[_ERROR_POS] = pos
                elif arg == 16:
                    value = bytes(buf[pos : pos + 16])
                    if len(value) != 16:
                        raise MalformedMessage("truncated uuid")
                elif arg == 8:
                    value = _i64(buf, pos)[0]
                else:
                    value = _i8(buf, pos)[0]
                vals[role] = value
            return pos + int(arg)
        if op in (OP_CSTR, OP_STR):
            compact = op == OP_CSTR
            if role and vals is not None:
                s, _a, b = self._string(pos, end, compact)
                vals[role] = (s, pos, b, compact) if role in (R_HOST, R_CONFIG_VALUE) else s
                if role == R_HOST and s is None:
                    raise MalformedMessage("null host in an endpoint")
                return b
            if compact:
                n, p = read_uvarint(buf, pos)
                n -= 1
            else:
                n = _i16(buf, pos)[0]
                p = pos + 2
            if n < -1 or n > end - p:
                raise MalformedMessage(f"bad string length {n}")
            return p + n if n > 0 else p
        if op in (OP_CBYTES, OP_BYTES):
            if op == OP_CBYTES:
                n, p = read_uvarint(buf, pos)
                n -= 1
            else:
                n = _i32(buf, pos)[0]
                p = pos + 4
            if n < -1 or n > end - p:
                raise MalformedMessage(f"bad bytes length {n}")
            return p + n if n > 0 else p
        # Children see this struct's topic and node id (a topic's name comes before its
        # partitions, a node's id before its listeners).
        if vals is not None:
            topic = vals.get(R_TOPIC_NAME, topic)
            topic_id = vals.get(R_TOPIC_ID, topic_id)
            node = vals.get(R_NODE_ID, node)
        if op == OP_STRUCT:
            return self.struct(arg, pos, end, topic, topic_id, node, vals, -1, None, depth + 1)
        if op == OP_NSTRUCT:
            marker = _i8(buf, pos)[0]
            if marker < 0:
                return pos + 1
            return self.struct(arg, pos + 1, end, topic, topic_id, node, vals, -1, None, depth + 1)
        # arrays
        count_start = pos
        if op == OP_CARRAY:
            n, pos = read_uvarint(buf, pos)
            n -= 1
        else:
            n = _i32(buf, pos)[0]
            pos += 4
        if n < 0:
            if n == -1:
                return pos
            raise MalformedMessage(f"bad array length {n}")
        # Kafka's own readers cap an array's length by the bytes that remain.
        if n > end - pos:
            raise MalformedMessage(f"array of {n} items cannot fit in {end - pos} bytes")
        elem_op, elem = arg
        if elem_op == OP_FIXED:
            return pos + n * int(elem)
        if elem_op != -1:  # strings or bytes
            for _ in range(n):
                if elem_op in (OP_CSTR, OP_CBYTES):
                    m, pos = read_uvarint(buf, pos)
                    m -= 1
                elif elem_op == OP_STR:
                    m = _i16(buf, pos)[0]
                    pos += 2
                else:
                    m = _i32(buf, pos)[0]
                    pos += 4
                if m < -1 or m > end - pos:
                    raise MalformedMessage(f"bad array element length {m}")
                if m > 0:
                    pos += m
            return pos
        if not elem[4]:
            fixed = elem[5]
            if fixed >= 0:
                return pos + n * int(fixed)
        span = ArraySpan(count_start, pos, n, op == OP_CARRAY) if elem[2] & K_ENDPOINT else None
        sub = self.struct
        for _ in range(n):
            pos = sub(elem, pos, end, topic, topic_id, node, vals, pos, span, depth + 1)
        return pos
