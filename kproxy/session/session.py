"""One client connection's rules, sans-IO: bytes in from either side, chunks out.

One entry point each way, `from_client` and `from_upstream`, each returning one step
type. Each asks the session's fast lane first (`kproxy.session.fast_lane`: the
commonest reads, whole frames forwarded as they came) and gives what the lane leaves to
the general path, which does everything, errors included; both admit requests by the
listener's one table of routes (`kproxy.session.admission`).

Requests flow to the broker with only their header parsed (the few that carry endpoints
mapped back to the cluster's addresses); responses are walked when their (api, version)
can carry endpoints or leadership, so that only kproxy addresses reach the client. A
response naming a node with no kproxy listener yet is held back until the runtime has
opened one (`listeners_opened`): a client told of a new node can dial it at once.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Final

from kproxy.protocol.apis import (
    API_VERSIONS,
    CLIENT_LISTENER_RESPONSES,
    FETCH,
    QUORUM_RESPONSES,
    WALKED_RESPONSES,
)
from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.errors import ProtocolError
from kproxy.protocol.frames import FrameMore, FrameReader, FrameStart
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.primitives import INT16, INT32
from kproxy.protocol.throttle import with_throttle
from kproxy.protocol.walker import MAX_RESPONSE_ENDPOINTS, WalkResult, walk
from kproxy.session.admission import CLIENT_REFUSED_APIS
from kproxy.session.answers import read_answer
from kproxy.session.fast_lane import FAST_LANE, SCANNED_RESPONSES, FastLane, response_is_plain
from kproxy.session.forward import charge, forward_requests
from kproxy.session.inflight import InFlight
from kproxy.session.mapping import AddressMapping, learn_endpoints
from kproxy.session.order import request_for
from kproxy.session.policy import ApiPolicy
from kproxy.session.quota import QuotaBook
from kproxy.session.records import Frame, Held, SessionClose, SessionLimits, frame_bytes
from kproxy.session.release import release_tail, release_unwalked, release_whole, throttle_for
from kproxy.session.response_edit import edit_response
from kproxy.session.state import STREAM_REQUESTS_AFTER, SessionState
from kproxy.session.steps import ClientStep, UpstreamStep
from kproxy.session.streaming import StreamedResponse, streamable

_Step = ClientStep | UpstreamStep
Whole = bytes | None  # a chunk that was exactly one frame (`FrameReader.whole`)
_pack_size: Final = INT32.pack
_corr_id: Final = INT32.unpack_from
_api_key: Final = INT16.unpack_from


class ProxySession(SessionState):
    """The rules of one client connection and the broker connection serving it."""

    __slots__ = ("_lane",)

    def __init__(
        self,
        mapping: AddressMapping,
        limits: SessionLimits,
        refused_apis: frozenset[int] = CLIENT_REFUSED_APIS,
        policy: ApiPolicy | None = None,
        controllers: AddressMapping | None = None,
        awaiting_success: Container[str] | None = None,
        fast_lane: bool = True,
        quotas: QuotaBook | None = None,
    ) -> None:
        super().__init__(
            mapping, limits, refused_apis, policy, controllers, awaiting_success, quotas
        )
        # Without it (`fast_lane=False`, for tests) every read takes the general path.
        self._lane: FastLane | None = FAST_LANE if fast_lane else None

    def close(self) -> None:
        """The connection is gone: forget every request and buffered byte."""
        self.inflight = CorrelationTable()
        self.held = None
        self._waiting = None
        self.stream = None
        self.client_reader = FrameReader(self.limits.max_frame_bytes)
        self.upstream_reader = FrameReader(self.limits.max_frame_bytes)

    @property
    def streaming_request(self) -> bool:
        """A large request is being forwarded as it arrives: its rest must follow."""
        return self.client_reader.passing

    @property
    def answering(self) -> bool:
        """Requests await responses, or one is on its way (streamed, or held)."""
        return bool(self.inflight) or self.stream is not None or bool(self.held)

    @property
    def unanswered(self) -> int:
        """Requests read from the client whose answer it has not had: a close now leaves
        them unanswered (in flight, held or streaming, waiting for a slot)."""
        held = len(self.held or ()) + (self.stream is not None)
        return len(self.inflight) + held + self._waiting_requests()

    @property
    def waiting_bytes(self) -> int:
        """Bytes of requests read past the in-flight limit, waiting for a slot."""
        return sum(frame_bytes(f) for f in self._waiting or ())

    def _waiting_requests(self) -> int:
        return sum(type(f) is not FrameMore for f in self._waiting or ())

    @property
    def client_bytes_pending(self) -> int:
        """Bytes of an incomplete request read so far (a close now truncates it)."""
        return self.client_reader.buffered

    # -- client -> upstream ------------------------------------------------------------------
    def from_client(self, data: bytes, now: float, into: ClientStep | None = None) -> ClientStep:
        """What bytes read from the client make: what to send each way, what to observe.
        `into`: a step to fill, emptied first (the runtime reuses one: a read's step is
        done with before the next read); a new one when None."""
        if into is None:
            step = ClientStep()
        else:  # ClientStep.__init__, inline: a call less on every read
            step = into
            step.to_upstream = []
            step.requests = []
            if not step.as_read:  # a step made as read set nothing else
                step.pause_reading = False
                step.held = 0
                step.close = None
                step.throttle_ms = 0
                step.answers = None
                step.refused_keys = None
        lane = self._lane
        taken = 0
        if lane is not None and not (self._waiting or self._paused_for_inflight):
            taken = lane.requests(self, data, now, step)
        quotas = self.quotas
        charged = quotas is not None and quotas.active
        if taken == len(data) and not charged:
            step.as_read = True
            return step
        step.as_read = False
        if taken != len(data):
            self._client_general(data[taken:] if taken else data, now, step)
        if charged and step.requests and step.close is None:
            assert quotas is not None
            charge(self, quotas, step, now)
        return step

    def _client_general(self, data: bytes, now: float, step: ClientStep) -> None:
        waited = self._waiting_requests() if self._waiting else 0
        try:
            frames = self.client_reader.feed_through(data)
            whole = self.client_reader.take_whole()
            if self._waiting:
                # Reading should be paused while requests wait for a slot; whatever still
                # arrives waits behind them, within a bound.
                self._wait(frames)
            elif frames:
                self._requests(frames, now, step, whole)
        except ProtocolError as exc:
            step.to_upstream = []
            step.answers = None
            step.close = SessionClose("client", exc.reason, str(exc))
            return
        if self._waiting:  # requests that began to wait in this step, each counted once
            step.held = self._waiting_requests() - waited
        if not self._paused_for_inflight and self._must_pause():
            self._paused_for_inflight = True
            step.pause_reading = True

    def _must_pause(self) -> bool:
        """Requests wait for a slot, or every slot is taken; never inside a request on its
        way to the broker (forwarded as it arrives): its response, freeing the slot,
        needs its end."""
        if self._waiting:
            return True
        return len(self.inflight) >= self.max_in_flight and not self.client_reader.passing

    def _wait(self, frames: list[Frame]) -> None:
        self._waiting = self._waiting or []
        self._waiting.extend(frames)
        waiting = self.waiting_bytes
        if waiting > self.limits.max_frame_bytes + STREAM_REQUESTS_AFTER:
            raise ProtocolError(
                f"{waiting} bytes of requests wait for an in-flight slot",
                reason="too_many_requests_waiting",
            )

    def _requests(self, frames: list[Frame], now: float, step: _Step, whole: Whole = None) -> None:
        """Admit and forward requests in order until the in-flight limit is reached; the
        rest wait, in order, for responses to free slots (`_release`)."""
        waiting = forward_requests(self, frames, now, step, whole)
        if waiting is not None:
            self._waiting = waiting

    # -- upstream -> client ------------------------------------------------------------------
    def from_upstream(
        self, data: bytes, now: float, into: UpstreamStep | None = None
    ) -> UpstreamStep:
        """What bytes read from the broker make (`into`: as for `from_client`); a step that
        needs listeners (`nodes_needing_listeners`) is ended by `listeners_opened`."""
        if into is None:
            step = UpstreamStep()
        else:  # UpstreamStep.__init__, inline
            step = into
            step.to_client = []
            step.responses = []
            if not step.as_read:  # a step made as read set nothing else
                step.resume_reading = False
                step.close = None
                step.more = None
                step.throttle_ms = 0
                step.needs_listeners = None
        lane = self._lane
        if lane is not None and not (self._waiting or self._paused_for_inflight):
            stream = self.stream
            if stream is not None:
                if lane.streamed(data, stream, self.upstream_reader):
                    step.to_client.append(data)
                    step.as_read = True
                    return step
            elif not self.held:
                taken = lane.responses(self, data, now, step)
                if taken == len(data):
                    step.as_read = True
                    return step
                if taken:
                    data = data[taken:]
        step.as_read = False
        self._upstream_general(data, now, step)
        return step

    def _upstream_general(self, data: bytes, now: float, step: UpstreamStep) -> None:
        needed: set[int] = set()
        try:
            for frame in self.upstream_reader.feed_through(data):
                if type(frame) is FrameMore:
                    self._stream_more(frame.data, now, step, needed)
                elif type(frame) is FrameStart:
                    # Streamed only when nothing before it waits for a listener.
                    if needed or not self._stream_start(frame, now, step):
                        self.upstream_reader.gather()
                else:
                    assert type(frame) is memoryview
                    self._walk_response(frame, now, step, needed)
            if needed:
                step.nodes_needing_listeners = sorted(needed)
                return
            if self.held:
                self._release(step, now)
            elif self._waiting or self._paused_for_inflight:
                self._release_waiting(step, now)
        except ProtocolError as exc:
            self._upstream_failed(step, exc)

    def listeners_opened(self, now: float, step: UpstreamStep | None = None) -> UpstreamStep:
        """Release the responses held for the listeners the last step asked for
        (whether or not they could be opened: an endpoint without one is removed), into
        that step when given: what it carries (a streamed body) goes out first."""
        step = UpstreamStep() if step is None else step
        step.nodes_needing_listeners = []
        try:
            self._release(step, now)
        except ProtocolError as exc:
            self._upstream_failed(step, exc)
        return step

    def _upstream_failed(self, step: UpstreamStep, exc: ProtocolError) -> None:
        """Bad bytes from the broker: nothing of this step reaches the client."""
        self.held = None
        self.stream = None
        step.to_client = []
        step.responses = []
        step.close = SessionClose("upstream", exc.reason, str(exc))

    def _walk_response(
        self, frame: memoryview, now: float, step: UpstreamStep, needed: set[int]
    ) -> None:
        """Match a whole response to its request, walk it and hold it for release; the
        nodes it names that need a listener before it may be sent go into `needed`."""
        req = request_for(self.inflight, frame)
        key = req.api_key
        whole = self.upstream_reader.take_whole()  # this response, when it came alone
        read_answer(self, req, frame, step)  # SASL, audit trail, transactions (read only)
        if req.authz is not None:  # kproxy.session.response_edit
            edited = edit_response(req.authz, key, req.version, frame, req.header_version)
            if edited is not None:
                frame, whole = memoryview(edited), None
        walked: WalkResult | None = None
        if key in WALKED_RESPONSES:
            _, body = parse_response_header(frame, req.header_version)
            # Scanned in the read itself when it came alone (the frame starts 4 bytes in).
            awaiting = self.awaiting_success
            plain = key in SCANNED_RESPONSES and (
                response_is_plain(frame, body, len(frame), req, awaiting)
                if whole is None
                else response_is_plain(whole, 4 + body, len(whole), req, awaiting)
            )
            if not plain:
                walked = walk(frame, body, key, req.version, False, MAX_RESPONSE_ENDPOINTS)
                self._learn(key, walked, step, needed)
        if walked is None and not self.held and key != API_VERSIONS:
            # Nothing to rewrite (ApiVersions may be clamped) and nothing before it still
            # held (a response that waits for a listener would be): it leaves at once.
            release_unwalked(req, frame, now - req.received, whole, step)
            return
        self._hold(Held(req, frame, walked, now - req.received, whole))

    def _learn(self, key: int, walked: WalkResult, step: UpstreamStep, needed: set[int]) -> None:
        # A broker's client listener says where the node is dialled from now on; the
        # KRaft quorum messages (KIP-853) name controller listeners, which are recorded
        # only for a node nothing else has named.
        authoritative = key in CLIENT_LISTENER_RESPONSES
        learn_endpoints(
            self._mapping_for(key), walked.endpoints, authoritative, step.learned, needed
        )

    # -- responses forwarded as they arrive (kproxy.session.streaming) -----------------------
    def _stream_start(self, start: FrameStart, now: float, step: UpstreamStep) -> bool:
        """Begin forwarding a large response as it arrives, if it may be (False: it is
        to be gathered whole). Whatever came before it is released first."""
        head = start.head
        req: InFlight | None = self.inflight.peek(_corr_id(head, 0)[0]) if len(head) >= 4 else None
        if req is None or req.authz is not None or not streamable(req.api_key, req.version):
            return False
        try:
            body = parse_response_header(head, req.header_version)[1]
        except ProtocolError:
            return False  # a header longer than the bytes in hand: gathered instead
        if self.held:
            self._release(step, now)
        request_for(self.inflight, head)
        held_back = self.upstream_reader.stream_after  # its last bytes wait for its walk
        self.stream = stream = StreamedResponse(req, start, body, now - req.received, held_back)
        if req.quota is not None:  # a Fetch response over its quota carries the throttle
            ms = throttle_for(req, 4 + start.size, now, step)
            if ms and len(head) >= body + 4:
                head = with_throttle(head, body, FETCH, req.version, ms)
        step.to_client.extend(stream.begin(head))
        return True

    def _stream_more(
        self, data: memoryview, now: float, step: UpstreamStep, needed: set[int]
    ) -> None:
        stream = self.stream
        assert stream is not None, "FrameMore without a streamed response"
        piece = stream.more(data)
        if piece:
            step.to_client.append(piece)
        if not stream.complete:
            return
        self.stream = None
        awaiting, client = self.awaiting_success, stream.request.client_id or ""
        walked = stream.finish(awaiting is None or client in awaiting)
        if walked is not None:
            self._learn(stream.request.api_key, walked, step, needed)
        self._hold(stream)  # its tail, released in order with what follows

    def _hold(self, item: Held | StreamedResponse) -> None:
        self.held = self.held or []
        self.held.append(item)

    def _mapping_for(self, api_key: int) -> AddressMapping:
        quorum = self.controllers if api_key in QUORUM_RESPONSES else None
        return self.mapping if quorum is None else quorum

    def _release(self, step: UpstreamStep, now: float) -> None:
        held, self.held = self.held, None
        if held is not None:
            for item in held:
                mapping = self._mapping_for(item.request.api_key)
                if type(item) is StreamedResponse:
                    release_tail(item, mapping, step)
                else:
                    assert type(item) is Held
                    release_whole(item, mapping, self.policy.advertised, step)
        self._release_waiting(step, now)

    def _release_waiting(self, step: UpstreamStep, now: float) -> None:
        limit = self.max_in_flight
        if self._waiting and len(self.inflight) < limit:
            waiting, self._waiting = self._waiting, None
            try:
                self._requests(waiting, now, step)
            except ProtocolError as exc:  # a waiting request was bad: the client's fault
                step.close = SessionClose("client", exc.reason, str(exc))
                return
        # Half the slots free, or a released request is on its way (`_must_pause`).
        if (
            self._paused_for_inflight
            and not self._waiting
            and (len(self.inflight) < limit // 2 + 1 or self.client_reader.passing)
        ):
            self._paused_for_inflight = False
            step.resume_reading = True
