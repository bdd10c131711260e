"""Incremental framing: int32 big-endian size, then that many bytes (PROTOCOL.md §3.2).

`FrameReader` is fed any split of the byte stream (down to one byte at a time) and
returns whole frames. It runs in linear time: frames that arrive whole inside one chunk
are returned as memoryview slices of that chunk (no copy), and a frame split across
chunks is gathered once into a bytearray. The size is checked against the limit as soon
as its 4 bytes are known, before any of the body is buffered.
"""

from __future__ import annotations

from kproxy.protocol.errors import FrameTooLarge, NegativeFrameSize, NotKafka
from kproxy.protocol.primitives import INT32

_size = INT32.unpack_from


def _not_kafka(prefix: bytes) -> NotKafka | None:
    """Recognise the protocols most often pointed at a Kafka port by mistake."""
    if prefix[:1] == b"\x16" and prefix[1:2] == b"\x03":
        return NotKafka("TLS handshake sent to a plaintext Kafka port", reason="tls_on_plain_port")
    if prefix[:4] in (b"GET ", b"POST", b"PUT ", b"HEAD", b"PRI "):
        return NotKafka("HTTP request sent to a Kafka port", reason="http_on_kafka_port")
    return None


class FrameReader:
    """Splits a byte stream into Kafka frames (the bytes after each size prefix)."""

    __slots__ = ("_first", "_need", "_partial", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._partial = bytearray()  # bytes of an incomplete frame, size prefix included
        self._need = 0  # total bytes the partial frame needs (0: size not known yet)
        self._first = True

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame."""
        return len(self._partial)

    def _check(self, size: int, prefix: bytes) -> None:
        if size < 0:
            raise NegativeFrameSize(f"negative frame size {size}")
        if size > self.max_frame_bytes:
            if self._first:
                other = _not_kafka(prefix)
                if other is not None:
                    raise other
            raise FrameTooLarge(
                f"frame of {size} bytes exceeds the limit of {self.max_frame_bytes}"
            )

    def feed(self, data: bytes | bytearray | memoryview) -> list[memoryview]:
        """Take the next bytes of the stream; return every frame they complete."""
        frames: list[memoryview] = []
        view = memoryview(data)
        pos = 0
        n = len(view)
        partial = self._partial
        if partial:
            if self._need == 0:
                take = min(4 - len(partial), n)
                partial += view[:take]
                pos = take
                if len(partial) < 4:
                    return frames
                size = _size(partial, 0)[0]
                self._check(size, bytes(partial[:4]))
                self._need = size + 4
            take = min(self._need - len(partial), n - pos)
            partial += view[pos : pos + take]
            pos += take
            if len(partial) < self._need:
                return frames
            frames.append(memoryview(bytes(partial))[4:])
            partial.clear()
            self._need = 0
            self._first = False
        while n - pos >= 4:
            size = _size(view, pos)[0]
            self._check(size, bytes(view[pos : pos + 4]))
            end = pos + 4 + size
            if end > n:
                break
            frames.append(view[pos + 4 : end])
            pos = end
            self._first = False
        if pos < n:
            partial += view[pos:]
            if len(partial) >= 4:
                size = _size(partial, 0)[0]
                self._check(size, bytes(partial[:4]))
                self._need = size + 4
        return frames
