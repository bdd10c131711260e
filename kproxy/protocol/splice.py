"""Apply byte edits to a frame without re-encoding it.

An edit replaces `frame[start:end]` with new bytes. The result is a list of chunks in
which every unchanged region is a memoryview of the input, headed by the new 4-byte
frame size, ready for `transport.writelines`.
"""

from __future__ import annotations

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.primitives import INT32

Edit = tuple[int, int, bytes]


def delta_within(edits: list[Edit], start: int, end: int) -> int:
    """How much the edits inside [start, end) change that region's length."""
    return sum(len(new) - (b - a) for a, b, new in edits if start <= a and b <= end)


def splice(frame: memoryview, edits: list[Edit]) -> tuple[list[bytes | memoryview], int]:
    """Return (chunks, new frame size); chunks start with the size prefix."""
    edits = sorted(edits, key=lambda e: (e[0], e[1]))
    chunks: list[bytes | memoryview] = [b""]
    pos = 0
    size = len(frame)
    for start, end, new in edits:
        if start < pos or end < start or end > len(frame):
            raise MalformedMessage("overlapping edits")
        if start > pos:
            chunks.append(frame[pos:start])
        if new:
            chunks.append(new)
        size += len(new) - (end - start)
        pos = end
    if pos < len(frame):
        chunks.append(frame[pos:])
    chunks[0] = INT32.pack(size)
    return chunks, size
