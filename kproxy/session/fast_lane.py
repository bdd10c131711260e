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

import struct
from collections.abc import Callable

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
from kproxy.protocol.primitives import INT32
from kproxy.protocol.produce_scan import produce_response_is_plain
from kproxy.protocol.requests import produce_acks
from kproxy.session.inflight import InFlight
from kproxy.session.policy import ApiPolicy
from kproxy.session.records import Frame, Held, SessionLimits
from kproxy.session.streaming import StreamedResponse

# Size, api key, version, correlation id, client id length: a header v1/v2 request.
_request_start = struct.Struct(">ihhih").unpack_from
_correlation_id = INT32.unpack_from


def _lane_requests() -> dict[tuple[int, int], tuple[int, int]]:
    """(api key, version) -> (request header version, response header version) for
    the requests the lane may take: known, not walked (they may carry endpoints), not
    ApiVersions (kproxy answers an unknown version itself), not SaslHandshake (v0 is
    refused), and with a client id in their header (header v1 or v2)."""
    lane: dict[tuple[int, int], tuple[int, int]] = {}
    for key, info in APIS.items():
        if key in WALKED_REQUESTS or key in (API_VERSIONS, SASL_HANDSHAKE):
            continue
        for version, headers in info.headers.items():
            if headers[0] >= 1:
                lane[(key, version)] = headers
    return lane


_LANE_REQUESTS = _lane_requests()


class FastLane:
    """What `ProxySession` gains: `request_alone` and `response_alone`."""

    __slots__ = ()

    # The session's state the lane reads (kproxy.session.session.ProxySession).
    client_reader: FrameReader
    upstream_reader: FrameReader
    inflight: CorrelationTable[InFlight]
    limits: SessionLimits
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
        key: int
        _, key, version, correlation_id, n = _request_start(data, 0)
        headers = _LANE_REQUESTS.get((key, version))
        if headers is None or key in self.refused_apis or key in self.policy.denied:
            return -1
        inflight = self.inflight
        # The general path pauses reading once the table is full: not the lane's case.
        if len(inflight) + 1 >= self.limits.max_in_flight_requests:
            return -1
        if inflight.peek(correlation_id) is not None:  # a duplicate: the general path says so
            return -1
        end = 14 + n
        if n < 0:
            if n != -1:
                return -1
            client_id = None
            end = 14
        elif end > len(data):
            return -1
        else:
            try:
                client_id = str(data[14:end], "utf-8")
            except UnicodeDecodeError:
                return -1
        if headers[0] == 2:  # flexible header: only an empty tagged-field section here
            if end >= len(data) or data[end] != 0:
                return -1
            end += 1
        if key == PRODUCE:
            try:
                acks = produce_acks(memoryview(data), end, version)
            except ProtocolError:
                return -1
            if acks == 0:  # no response to wait for: kept aside (CorrelationTable)
                return -1
        inflight.add(correlation_id, InFlight(key, version, headers[1], client_id, now))
        return key

    def _plain_produce(self, frame: bytes, body: int, req: InFlight) -> bool:
        """No error, no leader hint, no client awaiting a success in the response body at
        `body` (to the end of `frame`): nothing to walk (the general path's test too)."""
        awaits = self.awaits_success
        return (
            awaits is not None
            and not awaits(req.client_id)
            and produce_response_is_plain(frame, body, req.version)
        )

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
        correlation_id = _correlation_id(data, 4)[0]
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
