"""The commonest read each way, taken in one call: a request read alone and a plain
response read alone (sans-IO).

Nearly every read of a busy proxied connection is exactly one whole frame: a client
sends a request and waits, the broker answers it. For such a read the general path
(`ProxySession.client_bytes` / `upstream_bytes`) builds a step, a list of frames, a
parsed header tuple and a `ResponseSeen`, and the runtime walks all of them; together
that is most of kproxy's own CPU per small round trip. The lane decides from the read
itself whether it is that case and, if so, does only what the general path would have
done with it: the same checks, the same in-flight entry, the same bytes forwarded
unchanged. Anything else (a split request, a request kproxy walks, refuses or answers
itself, a response it walks, rewrites or holds, a full in-flight table, requests
waiting, a bad frame) is left untouched for the general path, which then does
everything, errors included. A read of several whole frames run together (a pipelining
client, a broker answering several at once) is offered to the lane frame by frame, as
if each had been read alone: what the lane leaves of it, from the first frame it does
not take, goes to the general path. A read that lies wholly inside a large response
being streamed, in bytes nothing reads (a Fetch response's records), is sent on as it
is. A small response read in parts is kept part by part and, once whole, taken as if
read alone, by the same call that takes a response read alone (`response_read`): a
broker writes a Fetch response in two or three writes (its header, the records from the
log with sendfile, the fields after them), and kproxy, reading as bytes arrive, read
78% of the responses of a consumer of small Fetch responses in two or three reads.
`tests/session/test_fast_lane.py` holds the two paths to the same outcome on every
input.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Final

from kproxy.protocol.apis import (
    API_VERSIONS,
    APIS,
    FETCH,
    PRODUCE,
    SASL_HANDSHAKE,
    WALKED_REQUESTS,
    WALKED_RESPONSES,
)
from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.errors import ProtocolError
from kproxy.protocol.fetch_scan import fetch_response_is_plain
from kproxy.protocol.frames import FrameReader
from kproxy.protocol.primitives import int32_at
from kproxy.protocol.produce_scan import produce_response_is_plain
from kproxy.protocol.requests import produce_acks
from kproxy.session.inflight import InFlight
from kproxy.session.policy import ApiPolicy
from kproxy.session.records import Frame, Held
from kproxy.session.streaming import StreamedResponse


def _lane_requests() -> dict[int, tuple[int, int]]:
    """api key << 16 | version -> (request header version, response header version) for
    the requests the lane may take: known, not walked (they may carry endpoints), not
    ApiVersions (kproxy answers an unknown version itself), not SaslHandshake (v0 is
    refused), and with a client id in their header (header v1 or v2)."""
    lane: dict[int, tuple[int, int]] = {}
    for key, info in APIS.items():
        if key in WALKED_REQUESTS or key in (API_VERSIONS, SASL_HANDSHAKE):
            continue
        for version, headers in info.headers.items():
            if headers[0] >= 1:
                # One int key, no tuple to build per read; a negative version read off
                # the wire (masked to 16 bits) matches no entry.
                lane[(key << 16) | (version & 0xFFFF)] = headers
    return lane


_LANE_REQUESTS: Final = _lane_requests()
# The walked responses with a scan that tells, exactly and cheaply, that a response has
# nothing to act on (no error, no KIP-951 leader hint or endpoints): its walk is skipped.
SCANNED_RESPONSES: Final = frozenset((PRODUCE, FETCH))


class FastLane:
    """What `ProxySession` gains: `request_alone`, `response_read` for a response read
    alone or a small one read in parts, `requests_leading` and `responses_leading` for
    a read of several frames, and `streamed_passes` for a read inside a response
    forwarded as it arrives."""

    # The client id last decoded, as it came and as decoded: a connection's requests all
    # name the same one (set by ProxySession.__init__).
    __slots__ = ("_client_id", "_client_id_raw")
    _client_id_raw: bytes
    _client_id: str | None

    # The session's state the lane reads (kproxy.session.session.ProxySession).
    client_reader: FrameReader
    upstream_reader: FrameReader
    inflight: CorrelationTable  # of InFlight
    max_in_flight: int
    refused_apis: frozenset[int]
    policy: ApiPolicy
    _held: list[Held | StreamedResponse] | None
    _stream: StreamedResponse | None
    _waiting: list[Frame] | None
    _paused_for_inflight: bool
    awaiting_success: Container[str] | None

    def request_alone(self, data: bytes, now: float) -> int:
        """Take a read that is one whole request the general path would forward as it
        came (recorded in flight, nothing paused): its api key, the read to be sent to
        the broker unchanged. -1: not taken, nothing changed."""
        if self._waiting or self._paused_for_inflight or len(data) < 14:
            return -1
        if not self.client_reader.alone(data):
            return -1
        return self._request(data, 0, len(data), now)

    def requests_leading(self, data: bytes, now: float, taken: list[tuple[int, int]]) -> int:
        """Of a read of several whole requests, take those at its front that
        `request_alone` would take, each as if read alone, appending (api key, frame
        size) for each to `taken`: the bytes taken, to be sent to the broker unchanged
        (0: none, nothing changed). The rest of the read is the general path's."""
        reader = self.client_reader
        if self._waiting or self._paused_for_inflight or not reader.between_frames:
            return 0
        pos = 0
        while (end := _whole_frame_end(data, pos, reader.max_frame_bytes)) > 0:
            key = self._request(data, pos, end, now) if end - pos >= 14 else -1
            if key < 0:
                break
            taken.append((key, end - pos - 4))
            pos = end
        return pos

    def _request(self, data: bytes, start: int, stop: int, now: float) -> int:
        """`request_alone`'s test and record, for the whole request framed at
        data[start:stop] (at least 14 bytes, within the frame limit)."""
        # Size, api key, version, correlation id, client id length (header v1/v2), read
        # byte by byte: a struct call would take fewer opcodes in pure Python, but its
        # code is more cache lines fetched from memory, and compiled more instructions
        # too. The api key and version are read
        # unsigned: a negative one (0x8000 and up) matches no entry of _LANE_REQUESTS.
        key = data[start + 4] << 8 | data[start + 5]
        version = data[start + 6] << 8 | data[start + 7]
        headers = _LANE_REQUESTS.get(key << 16 | version)
        if headers is None or key in self.refused_apis or key in self.policy.denied:
            return -1
        correlation_id = (
            data[start + 8] << 24 | data[start + 9] << 16 | data[start + 10] << 8 | data[start + 11]
        )
        if correlation_id >= 0x80000000:
            correlation_id -= 0x100000000
        n = data[start + 12] << 8 | data[start + 13]
        end = start + 14
        if n >= 0x8000:  # negative: a null client id (-1), or malformed
            if n != 0xFFFF:
                return -1
            client_id = None
        elif (end := end + n) > stop:
            return -1
        elif (raw := data[end - n : end]) == self._client_id_raw:
            client_id = self._client_id  # a connection's every request names the same one
        else:
            try:
                client_id = str(raw, "utf-8")
            except UnicodeDecodeError:
                return -1
            self._client_id_raw = raw
            self._client_id = client_id
        if headers[0] == 2:  # flexible header: only an empty tagged-field section here
            if end >= stop or data[end] != 0:
                return -1
            end += 1
        if key == PRODUCE:
            try:
                acks = produce_acks(data, end, stop, version)
            except ProtocolError:
                return -1
            if acks == 0:  # no response to wait for: kept aside (CorrelationTable)
                return -1
        # The general path pauses reading once the table is full: not the lane's case.
        try:
            taken = self.inflight.add_below(
                correlation_id,
                InFlight(key, version, headers[1], client_id, now),
                self.max_in_flight,
            )
        except ProtocolError:  # a duplicate, refused before the table changed: the general
            return -1  # path says so
        return key if taken else -1

    def _plain(self, frame: bytes | memoryview, body: int, stop: int, req: InFlight) -> bool:
        """No error, no leader hint, no client awaiting a success in the Produce or Fetch
        response body from `body` to `stop` of `frame`: nothing to walk. The general
        path's test (`_response` has it inline). A memoryview is copied for the scan,
        and only once the awaits test has passed."""
        if self._walks_plain(req):
            return False
        buf = frame if isinstance(frame, bytes) else bytes(frame)
        if req.api_key == PRODUCE:
            return produce_response_is_plain(buf, body, stop, req.version)
        return fetch_response_is_plain(buf, body, stop, req.version)

    def _walks_plain(self, req: InFlight) -> bool:
        """Whether a plain response to `req` (no error, no leader hint) is walked all the
        same: its client awaits a success (the leader table knows), or nobody can say."""
        awaiting = self.awaiting_success
        return awaiting is None or (req.client_id or "") in awaiting

    def response_read(self, data: bytes) -> tuple[InFlight, bytes] | bool:
        """Take a read from a broker that is one whole response the general path would
        forward as it came, at once (nothing to walk, clamp or rewrite, nothing held
        before it, no request waiting to be released by it), or part of a small
        response (one gathered whole) when nothing is held, streaming or waiting. A
        tuple: the request it answers, now out of the in-flight table, and the response
        whole, its size included (the read itself, or the parts it completes joined), to
        be sent to the client as it is. True: the start or a middle part of a small
        response, kept, nothing to send yet. False: not taken, nothing changed.

        One call for both: every read from a busy broker asks it, and a Fetch response
        mostly arrives in two or three reads."""
        # `_responses_may_pass`, inline: this runs for every read from a busy broker.
        if self._held or self._stream is not None or self._waiting or self._paused_for_inflight:
            return False
        reader = self.upstream_reader
        frame = reader.small_read(data)
        if frame is True or frame is False:
            return frame
        n = len(frame)
        if n < 8:
            return False
        req = self._response(frame, 0, n)
        if req is None:
            return False
        if frame is not data:  # parts joined: the reader lets them go
            reader.taken()
        return req, frame

    def responses_leading(self, data: bytes, taken: list[tuple[InFlight, int]]) -> int:
        """As `requests_leading`, for a read of several whole responses and
        `response_read`: (the request it answers, frame size) for each one taken."""
        reader = self.upstream_reader
        if not self._responses_may_pass() or not reader.between_frames:
            return 0
        pos = 0
        while (end := _whole_frame_end(data, pos, reader.max_frame_bytes)) > 0:
            req = self._response(data, pos, end) if end - pos >= 8 else None
            if req is None:
                break
            taken.append((req, end - pos - 4))
            pos = end
        return pos

    def streamed_passes(self, data: bytes) -> bool:
        """Take a read that lies wholly inside a large response being forwarded as it
        arrives (`kproxy.session.streaming`), in bytes nothing reads, short of its end:
        the read is sent to the client unchanged. A 1 MB Fetch response arrives in about
        ten reads; all but the first two and the last are this case. False: not taken,
        nothing changed."""
        stream = self._stream
        if stream is None or self._waiting or self._paused_for_inflight:
            return False
        n = len(data)
        reader = self.upstream_reader
        if n > reader.passing_room or not stream.passes(n):
            return False
        reader.passed(n)
        return True

    def _responses_may_pass(self) -> bool:
        """Nothing held or streaming before the next response, and no request waiting
        for the slot a response frees."""
        if self._held or self._stream is not None:
            return False
        return not (self._waiting or self._paused_for_inflight)

    def _response(self, data: bytes, start: int, stop: int) -> InFlight | None:
        """`response_read`'s test, for the whole response framed at data[start:stop]
        (at least 8 bytes): the request it answers, popped from the table."""
        # int32_at, inline: read for every response the lane is offered.
        correlation_id = (
            data[start + 4] << 24 | data[start + 5] << 16 | data[start + 6] << 8 | data[start + 7]
        )
        if correlation_id >= 0x80000000:
            correlation_id -= 0x100000000
        req: InFlight | None = self.inflight.peek(correlation_id)
        if req is None or req.then is not None:  # kproxy's own answers follow it
            return None
        key = req.api_key
        if key in WALKED_RESPONSES:
            if key not in SCANNED_RESPONSES:
                return None
            body = start + 8
            if req.header_version:
                # Header v1: a tagged-field count, which must be 0 (no field).
                if stop <= body or data[body]:
                    return None
                body += 1
            # `_plain` and its `_walks_plain`, inline: two calls less on every Produce and
            # Fetch response.
            awaiting = self.awaiting_success
            if awaiting is None or (req.client_id or "") in awaiting:
                return None
            if key == PRODUCE:
                if not produce_response_is_plain(data, body, stop, req.version):
                    return None
            elif not fetch_response_is_plain(data, body, stop, req.version):
                return None
        elif key == API_VERSIONS:
            return None
        self.inflight.answered(correlation_id)
        return req


def _whole_frame_end(data: bytes, pos: int, max_frame_bytes: int) -> int:
    """The end of the whole frame at `pos` of a read of several frames; -1 when none is
    whole there (or it is larger than the limit), or when the read is that one frame
    alone (`request_alone`'s or `response_read`'s case, already declined)."""
    n = len(data)
    if pos + 4 > n:
        return -1
    size = int32_at(data, pos)
    end = pos + 4 + size
    if size <= 0 or size > max_frame_bytes or end > n or (pos == 0 and end == n):
        return -1
    return end
