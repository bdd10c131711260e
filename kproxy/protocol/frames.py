"""Incremental framing: int32 big-endian size, then that many bytes (PROTOCOL.md §3.2).

`FrameReader` is fed any split of the byte stream (down to one byte at a time) and
returns whole frames. It runs in linear time: frames that arrive whole inside one chunk
are returned as memoryview slices of that chunk (no copy), and a frame split across
chunks is copied once, when its last chunk arrives. The size is checked against the limit as soon
as its 4 bytes are known, before any of the body is buffered.
"""

from __future__ import annotations

from kproxy.protocol.errors import FrameTooLarge, NegativeFrameSize, NotKafka
from kproxy.protocol.primitives import INT32

_size = INT32.unpack_from
# A piece of an incomplete frame at least this long is kept by reference, not copied.
_REFERENCE_AT_LEAST = 16384


def _not_kafka(prefix: bytes) -> NotKafka | None:
    """Recognise the protocols most often pointed at a Kafka port by mistake."""
    if prefix[:1] == b"\x16" and prefix[1:2] == b"\x03":
        return NotKafka("TLS handshake sent to a plaintext Kafka port", reason="tls_on_plain_port")
    if prefix[:4] in (b"GET ", b"POST", b"PUT ", b"HEAD", b"PRI "):
        return NotKafka("HTTP request sent to a Kafka port", reason="http_on_kafka_port")
    return None


class FrameReader:
    """Splits a byte stream into Kafka frames (the bytes after each size prefix)."""

    __slots__ = ("_first", "_have", "_head", "_need", "_pieces", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._head = bytearray()  # up to 3 bytes of a size prefix split across chunks
        # The body of a frame split across chunks, gathered as references to the chunks
        # and joined once when it is whole: one copy, however many chunks it came in.
        # Small pieces are copied into a bytearray instead, so that a peer dripping a
        # frame a byte at a time costs bytes, not an object per byte.
        self._pieces: list[memoryview | bytearray] = []
        self._have = 0  # bytes in _pieces
        self._need = -1  # body size of the frame being gathered; -1: none
        self._first = True

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame, its size prefix included."""
        if self._need >= 0:
            return 4 + self._have
        return len(self._head)

    def _reject(self, size: int, prefix: bytes) -> None:
        if size < 0:
            raise NegativeFrameSize(f"negative frame size {size}")
        if self._first:
            other = _not_kafka(prefix)
            if other is not None:
                raise other
        raise FrameTooLarge(f"frame of {size} bytes exceeds the limit of {self.max_frame_bytes}")

    def _keep(self, piece: memoryview, immutable: bool) -> None:
        if not piece:
            return
        pieces = self._pieces
        if immutable and len(piece) >= _REFERENCE_AT_LEAST:
            pieces.append(piece)
        elif pieces and type(pieces[-1]) is bytearray:
            pieces[-1] += piece
        else:
            pieces.append(bytearray(piece))

    def feed(self, data: bytes | bytearray | memoryview) -> list[memoryview]:
        """Take the next bytes of the stream; return every frame they complete.

        Frames whole inside ``data`` are memoryviews of it. A large piece of a ``bytes``
        chunk is kept by reference while its frame is incomplete (it is immutable); any
        other buffer is copied, since its owner may reuse it.
        """
        frames: list[memoryview] = []
        view = memoryview(data)
        n = len(view)
        pos = 0
        limit = self.max_frame_bytes
        if self._head:
            head = self._head
            take = min(4 - len(head), n)
            head += view[:take]
            pos = take
            if len(head) < 4:
                return frames
            size = _size(head, 0)[0]
            if size < 0 or size > limit:
                self._reject(size, bytes(head))
            head.clear()
            self._need = size
            self._have = 0
        if self._need >= 0:
            take = min(self._need - self._have, n - pos)
            if take:
                self._keep(view[pos : pos + take], type(data) is bytes)
                self._have += take
                pos += take
            if self._have < self._need:
                return frames
            pieces = self._pieces
            if len(pieces) == 1:
                frames.append(memoryview(pieces[0]))
            else:
                frames.append(memoryview(b"".join(pieces)))
            self._pieces = []
            self._need = -1
            self._first = False
        while n - pos >= 4:
            size = _size(view, pos)[0]
            if size < 0 or size > limit:
                self._reject(size, bytes(view[pos : pos + 4]))
            end = pos + 4 + size
            if end > n:
                self._pieces = []
                self._keep(view[pos + 4 :], type(data) is bytes)
                self._have = n - pos - 4
                self._need = size
                return frames
            frames.append(view[pos + 4 : end])
            pos = end
            self._first = False
        if pos < n:
            self._head += view[pos:]
        return frames
