"""The commonest read each way, taken in one call: a request read alone and a plain
response read alone (sans-IO).

Nearly every read of a busy proxied connection is exactly one whole frame: a client
sends a request and waits, the broker answers it. For such a read the general path
(`ProxySession.client_bytes` / `upstream_bytes`) builds a step, a list of frames, a
parsed header tuple and a `ResponseSeen`, and the runtime walks all of them; together
that is most of kproxy's own CPU per small round trip. The lane decides from the read
itself whether it is that case and, if so, does only what the general path would have
done with it: the same checks, the same in-flight entry, the same bytes forwarded
unchanged. Anything else (a split or coalesced read, a request kproxy walks, refuses or
answers itself, a response it walks, rewrites or holds, a full in-flight table, requests
waiting, a bad frame) is left untouched for the general path, which then does
everything, errors included. `tests/session/test_fast_lane.py` holds the two paths to
the same outcome on every input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kproxy.protocol.apis import (
    API_VERSIONS,
    APIS,
    PRODUCE,
    SASL_HANDSHAKE,
    WALKED_REQUESTS,
    WALKED_RESPONSES,
)
from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.errors import ProtocolError
from kproxy.protocol.frames import FrameReader
from kproxy.protocol.primitives import int16_at, int32_at
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


class FastLane:
    """What `ProxySession` gains: `request_alone` and `response_alone`."""

    # The client id last decoded, as it came and as decoded: a connection's requests all
    # name the same one (set by ProxySession.__init__).
    __slots__ = ("_client_id", "_client_id_raw")
    _client_id_raw: bytes
    _client_id: str | None

    # The session's state the lane reads (kproxy.session.session.ProxySession).
    client_reader: FrameReader
    upstream_reader: FrameReader
    inflight: CorrelationTable[InFlight]
    max_in_flight: int
    refused_apis: frozenset[int]
    policy: ApiPolicy
    _held: list[Held | StreamedResponse]
    _stream: StreamedResponse | None
    _waiting: list[Frame]
    _paused_for_inflight: bool
    awaits_success: Callable[[str | None], bool] | None

    def request_alone(self, data: bytes, now: float) -> int:
        """Take a read that is one whole request the general path would forward as it
        came (recorded in flight, nothing paused): its api key, the read to be sent to
        the broker unchanged. -1: not taken, nothing changed."""
        if self._waiting or self._paused_for_inflight or len(data) < 14:
            return -1
        if not self.client_reader.alone(data):
            return -1
        # Size, api key, version, correlation id, client id length (header v1/v2).
        key = int16_at(data, 4)
        version = int16_at(data, 6)
        correlation_id = int32_at(data, 8)
        n = int16_at(data, 12)
        headers = _LANE_REQUESTS.get((key << 16) | (version & 0xFFFF))
        if headers is None or key in self.refused_apis or key in self.policy.denied:
            return -1
        inflight = self.inflight
        # The general path pauses reading once the table is full: not the lane's case.
        if len(inflight) + 1 >= self.max_in_flight:
            return -1
        end = 14 + n
        if n < 0:
            if n != -1:
                return -1
            client_id = None
            end = 14
        elif end > len(data):
            return -1
        elif (raw := data[14:end]) == self._client_id_raw:
            client_id = self._client_id  # a connection's every request names the same one
        else:
            try:
                client_id = str(raw, "utf-8")
            except UnicodeDecodeError:
                return -1
            self._client_id_raw = raw
            self._client_id = client_id
        if headers[0] == 2:  # flexible header: only an empty tagged-field section here
            if end >= len(data) or data[end] != 0:
                return -1
            end += 1
        if key == PRODUCE:
            try:
                acks = produce_acks(data, end, version)
            except ProtocolError:
                return -1
            if acks == 0:  # no response to wait for: kept aside (CorrelationTable)
                return -1
        try:
            inflight.add(correlation_id, InFlight(key, version, headers[1], client_id, now))
        except ProtocolError:  # a duplicate, refused before the table changed: the general
            return -1  # path says so
        return key

    def _plain_produce(self, frame: bytes | memoryview, body: int, req: InFlight) -> bool:
        """No error, no leader hint, no client awaiting a success in the response body at
        `body` (to the end of `frame`): nothing to walk (the general path's test too).
        A memoryview is copied for the scan, and only once the awaits test has passed."""
        awaits = self.awaits_success
        if awaits is None or awaits(req.client_id):
            return False
        buf = frame if isinstance(frame, bytes) else bytes(frame)
        return produce_response_is_plain(buf, body, req.version)

    def response_alone(self, data: bytes) -> InFlight | None:
        """Take a read that is one whole response the general path would forward as it
        came, at once (nothing to walk, clamp or rewrite, nothing held before it, no
        request waiting to be released by it): the request it answers, now out of the
        in-flight table; the read is sent to the client unchanged. None: not taken,
        nothing changed."""
        if self._held or self._stream is not None or self._waiting or self._paused_for_inflight:
            return None
        if len(data) < 8 or not self.upstream_reader.alone(data):
            return None
        correlation_id = int32_at(data, 4)
        req = self.inflight.peek(correlation_id)
        if req is None:
            return None
        key = req.api_key
        if key in WALKED_RESPONSES:
            if key != PRODUCE:
                return None
            body = 4 if req.header_version == 0 else 5  # within the frame
            if body == 5 and (len(data) < 9 or data[8] != 0):  # a tagged field, or none
                return None
            if not self._plain_produce(data, 4 + body, req):
                return None
        elif key == API_VERSIONS:
            return None
        self.inflight.pop(correlation_id)
        return req
