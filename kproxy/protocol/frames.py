"""Incremental framing: int32 big-endian size, then that many bytes (docs/protocol.md §3).

`FrameReader` is fed any split of the byte stream (down to one byte at a time) and
returns whole frames. It runs in linear time: frames that arrive whole inside one chunk
are returned as memoryview slices of that chunk (no copy), and a frame split across
chunks is copied once, when its last chunk arrives. The size is checked against the
limit as soon as its 4 bytes are known, before any of the body is buffered.

`FrameReader.feed_through` also hands over a large frame before it is whole (cut-through):
its first bytes as a `FrameStart` once ``stream_after`` of them are in, then the rest
as `FrameMore` pieces as they arrive, so that a proxy forwarding the frame unchanged
neither waits for its last byte nor copies it. The caller may call `gather` right after
a `FrameStart` to have that frame returned whole instead.
"""

from __future__ import annotations

from typing import Any, Final, TypeGuard

from kproxy.protocol.errors import FrameTooLarge, NegativeFrameSize, NotKafka, ProtocolError
from kproxy.protocol.primitives import INT32

_size: Final = INT32.unpack_from
_pack_size: Final = INT32.pack
# A piece of an incomplete frame at least this long is kept by reference, not copied.
_REFERENCE_AT_LEAST: Final = 16384


def _not_kafka(prefix: bytes) -> NotKafka | None:
    """Recognise the protocols most often pointed at a Kafka port by mistake."""
    if prefix[:1] == b"\x16" and prefix[1:2] == b"\x03":
        return NotKafka("TLS handshake sent to a plaintext Kafka port", reason="tls_on_plain_port")
    if prefix[:4] in (b"GET ", b"POST", b"PUT ", b"HEAD", b"PRI "):
        return NotKafka("HTTP request sent to a Kafka port", reason="http_on_kafka_port")
    return None


class FrameStart:
    """The first bytes of a frame whose rest is still arriving (``size``: the whole body)."""

    __slots__ = ("head", "size")

    def __init__(self, head: memoryview, size: int) -> None:
        self.head = head
        self.size = size


class FrameMore:
    """The next bytes of the frame a `FrameStart` began (a view of the fed chunk)."""

    __slots__ = ("data",)

    def __init__(self, data: memoryview) -> None:
        self.data = data


class FrameReader:
    """Splits a byte stream into Kafka frames (the bytes after each size prefix)."""

    __slots__ = (
        "_first",
        "_have",
        "_head",
        "_need",
        "_offered",
        "_passing",
        "_pieces",
        "max_frame_bytes",
        "stream_after",
        "whole",
    )

    def __init__(self, max_frame_bytes: int, stream_after: int = 0) -> None:
        self.max_frame_bytes = max_frame_bytes
        # feed_through: frames of at least this many bytes are handed over in pieces.
        self.stream_after = stream_after
        # Up to 3 bytes of a size prefix split across chunks. Immutable, and the empty
        # one shared: an idle connection's two readers then hold no buffer objects.
        self._head = b""
        # The body of a frame split across chunks, gathered as references to the chunks
        # and joined once when it is whole: one copy, however many chunks it came in.
        # Small pieces are copied into a bytearray instead, so that a peer dripping a
        # frame a byte at a time costs bytes, not an object per byte. None: no pieces
        # (made at the first, so that an idle connection holds no empty list).
        self._pieces: list[memoryview | bytearray] | None = None
        self._have = 0  # bytes of the incomplete frame's body in hand (or passed on)
        self._need = -1  # body size of the incomplete frame; -1: none
        self._offered = 0  # 1: a FrameStart was just returned; -1: gather() was called
        self._passing = False  # the incomplete frame is being handed over in pieces
        self._first = True
        # The chunk the last feed was given, when it was exactly one frame and nothing
        # else (its size prefix included) and immutable: a frame forwarded unchanged is
        # then sent as that one buffer, not as a new size prefix and a view.
        self.whole: bytes | None = None

    def take_whole(self) -> bytes | None:
        """`whole`, let go of: an idle connection must not keep its last chunk alive."""
        whole, self.whole = self.whole, None
        return whole

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete frame read so far, its size prefix included."""
        if self._need >= 0:
            return 4 + self._have
        return len(self._head)

    @property
    def passing(self) -> bool:
        """A frame is being handed over in pieces (its `FrameStart` was taken)."""
        return self._passing or self._offered == 1

    @property
    def passing_room(self) -> int:
        """Bytes of the frame being handed over in pieces still to come, less its last
        one: a read no longer than this lies wholly inside that frame (0: no such frame)."""
        return self._need - self._have - 1 if self._passing else 0

    def passed(self, n: int) -> None:
        """The caller handed over the next `n` bytes itself (at most `passing_room`):
        what `feed_through` would have returned as one `FrameMore`."""
        self._have += n

    def gather(self) -> None:
        """Return the frame the last `FrameStart` began whole, instead of in pieces.

        Only until the next bytes are fed: from then on the frame's rest is handed over
        in pieces, and a frame that must be read whole (to be refused or rewritten) can
        no longer be: a ProtocolError, so that the connection is closed, never a frame
        forwarded unchecked."""
        if self._offered != 1:
            raise ProtocolError(
                "a large frame that must be read whole was read past its start",
                reason="frame_not_gathered",
            )
        self._offered = -1

    def _check(self, size: int, prefix: bytes) -> None:
        """Refuse a size out of range, and the first bytes of another protocol whatever
        the size they read as (a TLS ClientHello reads as ~369 MB, an HTTP request as
        ~1.2 GB: both within what `max_frame_bytes` may be set to)."""
        if self._first:
            other = _not_kafka(prefix)
            if other is not None:
                raise other
        if size < 0:
            raise NegativeFrameSize(f"negative frame size {size}")
        if size > self.max_frame_bytes:
            raise FrameTooLarge(
                f"frame of {size} bytes exceeds the limit of {self.max_frame_bytes}"
            )

    def _keep(self, piece: memoryview, immutable: bool) -> None:
        if not piece:
            return
        pieces = self._pieces
        if pieces is None:
            pieces = self._pieces = []
        if immutable and len(piece) >= _REFERENCE_AT_LEAST:
            pieces.append(piece)
        elif pieces and type(pieces[-1]) is bytearray:
            pieces[-1] += piece
        else:
            pieces.append(bytearray(piece))

    def _joined(self) -> memoryview:
        pieces = self._pieces
        if pieces is None:  # a frame with an empty body
            return memoryview(b"")
        if len(pieces) == 1:
            return memoryview(pieces[0])
        return memoryview(b"".join(pieces))

    def _offer(self, out: list[Any]) -> None:
        """Hand over the incomplete frame's start, if it is large enough to stream and
        not already handed over or asked for whole (its body is larger than what is in
        hand, so ``stream_after`` bytes in hand make it large enough)."""
        if self._passing or self._offered or self._have < self.stream_after:
            return
        head = self._joined()
        self._pieces = [head]
        self._offered = 1
        out.append(FrameStart(head, self._need))

    def feed(self, data: bytes | bytearray | memoryview) -> list[memoryview]:
        """Take the next bytes of the stream; return every frame they complete.

        Frames whole inside ``data`` are memoryviews of it. A large piece of a ``bytes``
        chunk is kept by reference while its frame is incomplete (it is immutable); any
        other buffer is copied, since its owner may reuse it.
        """
        return self._feed(data, False)

    def feed_through(
        self, data: bytes | bytearray | memoryview
    ) -> list[memoryview | FrameStart | FrameMore]:
        """As `feed`, but a frame of at least ``stream_after`` bytes comes as a
        `FrameStart` and `FrameMore` pieces (see the module's docstring)."""
        # Most reads of a proxied connection are one whole frame and nothing else, with
        # nothing of another frame in hand: taken here at the cost of one size check.
        if self.alone(data):
            self.whole = data
            return [memoryview(data)[4:]]
        return self._feed(data, self.stream_after > 0)

    @property
    def between_frames(self) -> bool:
        """Nothing of a frame in hand, and the stream's first frame already checked: the
        next byte read is a frame's first."""
        return self._need < 0 and not self._head and not self._first

    def alone(self, data: bytes | bytearray | memoryview) -> TypeGuard[bytes]:
        """Whether `data` is one whole frame and nothing else, as ``bytes``, with nothing
        of another frame in hand and the stream's first frame already checked: what
        `feed_through` would return as that one frame, with `whole` set."""
        # between_frames, read inline: a property call is most of this test's cost in
        # pure Python, and it runs on every read of a busy connection.
        if type(data) is not bytes or self._need >= 0 or self._head or self._first:
            return False
        n = len(data)
        if n < 4:
            return False
        # int32_at, inline (a call in pure Python); a negative size (top bit set) never
        # equals n - 4.
        size = data[0] << 24 | data[1] << 16 | data[2] << 8 | data[3]
        return size + 4 == n and size <= self.max_frame_bytes

    def small_read(self, data: bytes) -> bytes | bool:
        """The fast lane's one question for a read from a broker, asked of every such
        read. `data` itself: it is one whole frame and nothing else (`alone`). True: it
        is the start or the next part of a frame returned whole (smaller than
        ``stream_after``) and does not complete it; it is kept, as `feed_through` would
        keep it. The frame, its size prefix included: `data` completes exactly a frame
        whose earlier parts are kept, joined here without taking it (`taken` does).
        False: none of these, nothing changed; `feed_through` decides.

        A broker writes a Fetch response in parts (its header, then the records from the
        log with sendfile, then the fields after them), and a proxy reading as soon as
        bytes arrive mostly reads it in two or three parts. The stream's first frame is
        never taken here: `_check` refuses another protocol's first bytes."""
        if type(data) is not bytes or self._head:
            return False
        n = len(data)
        need = self._need
        if need < 0:  # a frame's first bytes
            if n < 4 or self._first:  # the stream's first size is `_check`ed
                return False
            # `alone`'s test written out here, not called (a call per read in pure
            # Python): change the two together (tests/protocol/test_frames_headers.py holds
            # this method to `feed_through`). int32_at, inline; read unsigned, a
            # negative size (top bit set) exceeds any limit.
            size = data[0] << 24 | data[1] << 16 | data[2] << 8 | data[3]
            if size > self.max_frame_bytes:
                return False
            if size + 4 == n:
                return data
            if self._passing or self._offered or n - 4 > size or 0 < self.stream_after <= size:
                return False
            self._need = size
            self._have = n - 4
            self._keep(memoryview(data)[4:], True)
            return True
        if self._passing or self._offered:
            return False
        have = self._have + n
        if have == need:
            return b"".join((_pack_size(need), *(self._pieces or ()), data))
        if have > need or 0 < self.stream_after <= need:
            return False
        self._have = have
        self._keep(memoryview(data), True)
        return True

    def taken(self) -> None:
        """The frame `small_read` joined from its parts was taken by the caller: the next
        byte read is a frame's first."""
        self._pieces = None
        self._need = -1
        self._have = 0
        self._first = False

    def _feed(self, data: bytes | bytearray | memoryview, stream: bool) -> list[Any]:
        frames: list[Any] = []
        view = memoryview(data)
        n = len(view)
        pos = 0
        self.whole = None
        limit = self.max_frame_bytes
        if self._offered == 1:  # the caller took the FrameStart: pass the rest on
            self._passing = True
            self._pieces = None
            self._offered = 0
        if self._head:
            take = min(4 - len(self._head), n)
            head = self._head + bytes(view[:take])
            pos = take
            if len(head) < 4:
                self._head = head
                return frames
            size = _size(head, 0)[0]
            if size < 0 or size > limit or self._first:
                self._check(size, head)
            self._head = b""
            self._need = size
            self._have = 0
        if self._need >= 0:
            take = min(self._need - self._have, n - pos)
            if self._passing:
                if take:
                    frames.append(FrameMore(view[pos : pos + take]))
            elif take:
                self._keep(view[pos : pos + take], type(data) is bytes)
            self._have += take
            pos += take
            if self._have < self._need:
                if stream:
                    self._offer(frames)
                return frames
            if not self._passing:
                frames.append(self._joined())
            self._pieces = None
            self._need = -1
            self._passing = False
            self._offered = 0
            self._first = False
        while n - pos >= 4:
            size = _size(view, pos)[0]
            if size < 0 or size > limit or self._first:
                self._check(size, bytes(view[pos : pos + 4]))
            end = pos + 4 + size
            if end > n:  # nothing of a frame is in hand here: _pieces is None
                self._keep(view[pos + 4 :], type(data) is bytes)
                self._have = n - pos - 4
                self._need = size
                if stream:
                    self._offer(frames)
                return frames
            frames.append(view[pos + 4 : end])
            if end == n and pos == 0 and type(data) is bytes:
                self.whole = data
            pos = end
            self._first = False
        if pos < n:  # nothing of a size prefix was in hand: the loop began without one
            self._head = bytes(view[pos:])
        return frames
