"""The commonest read each way, taken in one call: a request read alone and a plain
response read alone (sans-IO).

Nearly every read of a busy proxied connection is exactly one whole frame: a client
sends a request and waits, the broker answers it. For such a read the general path
of `SessionState.from_client` / `from_upstream` builds a step, a list of frames, a
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
read alone, by the same test that takes a response read alone: a
broker writes a Fetch response in two or three writes (its header, the records from the
log with sendfile, the fields after them), and kproxy, reading as bytes arrive, read
78% of the responses of a consumer of small Fetch responses in two or three reads.
The lane is a helper the session owns: the session asks it first, from its two entry
points, and it fills the same step the general path fills. It admits a request by the
listener's routes (`kproxy.session.admission.Admission.lane`), the general path's own
table. `tests/session/test_fast_lane.py` holds the two paths to the same outcome on
every input.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Final

from kproxy.protocol.apis import (
    API_VERSIONS,
    FETCH,
    PRODUCE,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    WALKED_RESPONSES,
)
from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.errors import ProtocolError
from kproxy.protocol.fetch_scan import fetch_response_is_plain
from kproxy.protocol.frames import FrameReader
from kproxy.protocol.primitives import int32_at
from kproxy.protocol.produce_scan import produce_response_is_plain
from kproxy.protocol.requests import produce_acks
from kproxy.session.audit import CHANGE_APIS
from kproxy.session.inflight import InFlight
from kproxy.session.state import SessionState
from kproxy.session.steps import ClientStep, UpstreamStep
from kproxy.session.streaming import StreamedResponse
from kproxy.session.transactions import TRANSACTION_APIS

# The walked responses with a scan that tells, exactly and cheaply, that a response has
# nothing to act on (no error, no KIP-951 leader hint or endpoints): its walk is skipped.
SCANNED_RESPONSES: Final = frozenset((PRODUCE, FETCH))
# Responses the general path reads though nothing in them changes: ApiVersions (kproxy
# may clamp it), SASL (the principal it confirms, `kproxy.session.identity`), those to
# requests that change the cluster (their outcome, `kproxy.session.audit`), and those
# to a transactional producer's (whether its id is its, `kproxy.session.transactions`).
GENERAL_RESPONSES: Final = (
    frozenset((API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE)) | CHANGE_APIS | TRANSACTION_APIS
)


def response_is_plain(
    frame: bytes | memoryview,
    body: int,
    stop: int,
    req: InFlight,
    awaiting_success: Container[str] | None,
) -> bool:
    """No error, no leader hint, no client awaiting a success in the Produce or Fetch
    response body from `body` to `stop` of `frame`: nothing to walk. Both paths' test.
    A memoryview is copied for the scan, and only once the awaits test has passed."""
    if awaiting_success is None or (req.client_id or "") in awaiting_success:
        return False
    buf = frame if isinstance(frame, bytes) else bytes(frame)
    if req.api_key == PRODUCE:
        return produce_response_is_plain(buf, body, stop, req.version)
    return fetch_response_is_plain(buf, body, stop, req.version)


class FastLane:
    """The commonest reads of one session, taken in one pass (the module says which).

    No state of its own: what it reads and records is the session's, so one lane
    (`FAST_LANE`) serves every session and an idle connection holds nothing for it."""

    __slots__ = ()

    def requests(self, session: SessionState, data: bytes, now: float, step: ClientStep) -> int:
        """Take the whole requests at the front of a read that the general path would
        forward as they came, each recorded in flight: the bytes taken, forwarded in
        `step` unchanged with their (api key, frame size) (0: none, nothing changed)."""
        reader = session.client_reader
        if not reader.between_frames:
            return 0
        limit, n, pos = reader.max_frame_bytes, len(data), 0
        while pos + 14 <= n:
            # int32_at, inline: read for every request the lane is offered.
            size = data[pos] << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]
            end = pos + 4 + size
            # A negative size (top bit set) is over the limit; the header read below needs
            # 10 bytes after the size.
            if size < 10 or size > limit or end > n:
                break
            key = self._request(session, data, pos, end, now)
            if key < 0:
                break
            step.requests.append((key, size))
            pos = end
        if pos:
            step.to_upstream.append(data if pos == n else data[:pos])
        return pos

    def _request(
        self, session: SessionState, data: bytes, start: int, stop: int, now: float
    ) -> int:
        """The api key of the whole request framed at data[start:stop] (at least 14
        bytes), now in flight; -1: not the lane's, nothing changed."""
        # Api key, version, correlation id, client id length (header v1/v2), read byte by
        # byte: a struct call would take fewer opcodes in pure Python, but its code is
        # more cache lines fetched from memory, and compiled more instructions too. The
        # api key and version are read unsigned: a negative one matches no route.
        key = data[start + 4] << 8 | data[start + 5]
        version = data[start + 6] << 8 | data[start + 7]
        headers = session.admission.lane.get(key << 16 | version)
        if headers is None:
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
        elif (raw := data[end - n : end]) == session.lane_client_id_raw:
            # A connection's every request names the same client id: decoded once.
            client_id = session.lane_client_id
        else:
            try:
                client_id = str(raw, "utf-8")
            except UnicodeDecodeError:
                return -1
            session.lane_client_id_raw = raw
            session.lane_client_id = client_id
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
            taken = session.inflight.add_below(
                correlation_id,
                InFlight(key, version, headers[1], client_id, now),
                session.max_in_flight,
            )
        except ProtocolError:  # a duplicate, refused before the table changed: the general
            return -1  # path says so
        return key if taken else -1

    def responses(self, session: SessionState, data: bytes, now: float, step: UpstreamStep) -> int:
        """Take the whole responses at the front of a broker's read that the general
        path would send on as they came, at once (nothing to walk, clamp or rewrite),
        or a part of a small response (one gathered whole), kept: the bytes taken
        (0: none, nothing changed), the responses in `step` with what they answered.
        The caller has checked that nothing is held, streaming or waiting."""
        reader, inflight, awaiting = (
            session.upstream_reader,
            session.inflight,
            session.awaiting_success,
        )
        frame = reader.small_read(data)
        if frame is True:  # the start or a middle part of a small response, kept
            return len(data)
        if frame is not False:
            n = len(frame)
            req = _response(frame, 0, n, inflight, awaiting) if n >= 8 else None
            if req is not None:
                if frame is not data:  # parts joined: the reader lets them go
                    reader.taken()
                step.to_client.append(frame)
                req.size = n - 4  # `InFlight.answered`, inline: a call less per response
                req.upstream_seconds = now - req.received
                step.responses.append(req)
                return len(data)
            return 0  # one whole response, the general path's
        if not reader.between_frames:
            return 0
        limit, n, pos = reader.max_frame_bytes, len(data), 0
        while (end := _whole_frame_end(data, pos, limit)) > 0:
            if end == n and pos == 0:  # one whole frame `small_read` declined
                break
            req = _response(data, pos, end, inflight, awaiting) if end - pos >= 8 else None
            if req is None:
                break
            step.responses.append(req.answered(end - pos - 4, now - req.received))
            pos = end
        if pos:
            step.to_client.append(data if pos == n else data[:pos])
        return pos

    def streamed(self, data: bytes, stream: StreamedResponse, reader: FrameReader) -> bool:
        """Take a read that lies wholly inside a large response being forwarded as it
        arrives (`kproxy.session.streaming`), in bytes nothing reads, short of its end:
        sent to the client unchanged. A 1 MB Fetch response arrives in about ten reads;
        all but the first two and the last are this case. False: nothing changed."""
        n = len(data)
        if n > reader.passing_room or not stream.passes(n):
            return False
        reader.passed(n)
        return True


def _response(
    data: bytes,
    start: int,
    stop: int,
    inflight: CorrelationTable,
    awaiting_success: Container[str] | None,
) -> InFlight | None:
    """The request the whole response framed at data[start:stop] (at least 8 bytes)
    answers, popped from the table; None: not the lane's, nothing changed."""
    # int32_at, inline: read for every response the lane is offered.
    correlation_id = (
        data[start + 4] << 24 | data[start + 5] << 16 | data[start + 6] << 8 | data[start + 7]
    )
    if correlation_id >= 0x80000000:
        correlation_id -= 0x100000000
    req: InFlight | None = inflight.peek(correlation_id)
    # kproxy's own answers follow it, a quota is to see it (kproxy.session.quota) or
    # the listener's authorization is to edit it (kproxy.session.response_edit).
    if req is None or req.then is not None or req.quota is not None or req.authz is not None:
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
        if not response_is_plain(data, body, stop, req, awaiting_success):
            return None
    elif key in GENERAL_RESPONSES:
        return None
    inflight.answered(correlation_id)
    return req


def _whole_frame_end(data: bytes, pos: int, max_frame_bytes: int) -> int:
    """The end of the whole frame at `pos` of a read; -1 when none is whole there (or it
    is larger than the limit)."""
    n = len(data)
    if pos + 4 > n:
        return -1
    size = int32_at(data, pos)
    end = pos + 4 + size
    if size <= 0 or size > max_frame_bytes or end > n:
        return -1
    return end


FAST_LANE: Final = FastLane()
