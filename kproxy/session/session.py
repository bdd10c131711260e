"""One client connection's rules, sans-IO: bytes in from either side, chunks out.

Requests flow client -> upstream with only their header parsed (and the few requests
that carry endpoints mapped back to the cluster's own addresses); responses flow
upstream -> client, walked when their (api, version) can carry endpoints or leadership,
rewritten so that only kproxy addresses reach the client.

A response that names a node kproxy has no listener for yet is held back: the step
lists the nodes, the runtime opens their listeners, and `listeners_opened` rewrites and
releases what was held. So a client told about a new node can connect to it at once
(its connection is queued by the kernel), and in the OS-chosen port mode the port it
is told is the port the listener really got.
"""

from __future__ import annotations

from typing import NamedTuple

from kproxy.protocol.api_versions import clamp_api_versions
from kproxy.protocol.apis import (
    API_VERSIONS,
    CLIENT_LISTENER_RESPONSES,
    PRODUCE,
    SASL_HANDSHAKE,
    WALKED_REQUESTS,
    WALKED_RESPONSES,
    api_name,
    header_versions,
)
from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.errors import MalformedMessage, ProtocolError, UnsupportedVersion
from kproxy.protocol.frames import FrameMore, FrameReader, FrameStart
from kproxy.protocol.headers import RequestHeader, parse_request_header, parse_response_header
from kproxy.protocol.primitives import INT32
from kproxy.protocol.requests import produce_acks
from kproxy.protocol.rewriter import rewrite
from kproxy.protocol.walker import Endpoint, WalkResult, can_walk, walk
from kproxy.session.mapping import AddressMapping
from kproxy.session.steps import ClientStep, NodeLearned, ResponseSeen, SessionClose, UpstreamStep

_pack_size = INT32.pack
_corr_id = INT32.unpack_from
# Requests at least this large (Produce batches) are forwarded as they arrive rather than
# gathered whole first: cut-through saves a copy and the time to receive the whole frame
# before sending its first byte. Their header and Produce acks are within these bytes
# (a client id is at most 32,767 bytes, a transactional id likewise).
STREAM_REQUESTS_AFTER = 65536
_NO_NODES: frozenset[int] = frozenset()


class SessionLimits(NamedTuple):
    max_frame_bytes: int
    max_in_flight_requests: int


class InFlight:
    """A request waiting for its response."""

    __slots__ = ("api_key", "client_id", "header_version", "received", "version")

    def __init__(
        self, api_key: int, version: int, header_version: int, client_id: str | None, now: float
    ) -> None:
        self.api_key = api_key
        self.version = version
        self.header_version = header_version  # of the response
        self.client_id = client_id
        self.received = now  # arrived from the client and was forwarded at once


class _Held(NamedTuple):
    """A response walked but not yet rewritten and released."""

    request: InFlight
    frame: memoryview
    walked: WalkResult | None
    upstream_seconds: float


class ProxySession:
    """The rules of one client connection and the broker connection serving it."""

    __slots__ = (
        "_held",
        "_paused_for_inflight",
        "client_reader",
        "inflight",
        "limits",
        "mapping",
        "upstream_reader",
    )

    def __init__(self, mapping: AddressMapping, limits: SessionLimits) -> None:
        self.mapping = mapping
        self.limits = limits
        self.client_reader = FrameReader(limits.max_frame_bytes, stream_after=STREAM_REQUESTS_AFTER)
        self.upstream_reader = FrameReader(limits.max_frame_bytes)
        self.inflight: CorrelationTable[InFlight] = CorrelationTable()
        self._paused_for_inflight = False
        self._held: list[_Held] = []

    @property
    def client_bytes_pending(self) -> int:
        """Bytes of an incomplete request read so far (a close now truncates it)."""
        return self.client_reader.buffered

    # -- client -> upstream ------------------------------------------------------------------
    def client_bytes(self, data: bytes, now: float) -> ClientStep:
        step = ClientStep()
        try:
            frames = self.client_reader.feed_through(data)
            if frames:
                step.to_upstream = self._requests(frames, now, step)
        except ProtocolError as exc:
            step.to_upstream = []
            step.close = SessionClose("client", exc.reason, str(exc))
            return step
        if (
            len(self.inflight) >= self.limits.max_in_flight_requests
            and not self._paused_for_inflight
        ):
            self._paused_for_inflight = True
            step.pause_reading = True
        return step

    def _requests(
        self, frames: list[memoryview | FrameStart | FrameMore], now: float, step: ClientStep
    ) -> list[bytes | memoryview]:
        out: list[bytes | memoryview] = []
        for frame in frames:
            if type(frame) is FrameMore:
                out.append(frame.data)
                continue
            if type(frame) is FrameStart:
                # A large request on its way: unless kproxy must rewrite it, it is passed
                # on as it arrives, its header read from its first bytes.
                hdr = self._admit(frame.head, frame.size, now, step, whole=False)
                if hdr is None:
                    self.client_reader.gather()
                    continue
                out.append(_pack_size(frame.size))
                out.append(frame.head)
                continue
            assert type(frame) is memoryview
            hdr = self._admit(frame, len(frame), now, step, whole=True)
            assert hdr is not None
            if hdr.api_key in WALKED_REQUESTS and can_walk(hdr.api_key, hdr.api_version, True):
                result = walk(frame, hdr.body_offset, hdr.api_key, hdr.api_version, True)
                if result.endpoints:
                    rw = rewrite(frame, result.endpoints, self._cluster_view)
                    out.extend(rw.chunks)
                    continue
            out.append(_pack_size(len(frame)))
            out.append(frame)
        return out

    def _cluster_view(self, ep: Endpoint) -> tuple[str, int]:
        return self.mapping.cluster_address(ep.host, ep.port)

    def _admit(
        self, frame: memoryview, size: int, now: float, step: ClientStep, whole: bool
    ) -> RequestHeader | None:
        """Check a request's header and record it as in flight.

        For the start of a frame (``whole`` false) that kproxy may have to rewrite,
        nothing is recorded and None is returned: it is read again when whole.
        """
        hdr = parse_request_header(frame)
        key = hdr.api_key
        if not whole and key in WALKED_REQUESTS:
            return None
        versions = header_versions(key, hdr.api_version)
        if versions is None:
            if api_name(key) == "Unknown":
                raise UnsupportedVersion(f"unknown api key {key}", reason="unknown_api_key")
            raise UnsupportedVersion(
                f"{api_name(key)} v{hdr.api_version} is not a version kproxy knows",
                reason="unknown_api_version",
            )
        if key == SASL_HANDSHAKE and hdr.api_version == 0:
            # After SaslHandshake v0 the client sends raw SASL tokens with no Kafka
            # header, which kproxy cannot frame-check. Every client since Kafka 1.0
            # uses v1 + SaslAuthenticate (KIP-152), so v0 is refused outright.
            raise UnsupportedVersion(
                "SaslHandshake v0 (raw SASL tokens, pre-KIP-152) is not supported",
                reason="sasl_handshake_v0",
            )
        step.requests.append((key, size))
        # Produce with acks=0 expects no response: it must not hold an in-flight slot.
        expects_response = not (
            key == PRODUCE and produce_acks(frame, hdr.body_offset, hdr.api_version) == 0
        )
        self.inflight.add(
            hdr.correlation_id,
            InFlight(key, hdr.api_version, versions[1], hdr.client_id, now),
            expects_response,
        )
        return hdr

    # -- upstream -> client ------------------------------------------------------------------
    def upstream_bytes(self, data: bytes, now: float) -> UpstreamStep:
        step = UpstreamStep()
        try:
            frames = self.upstream_reader.feed(data)
            if frames:
                needed = self._walk_responses(frames, now, step)
                if needed:
                    step.nodes_needing_listeners = sorted(needed)
                    return step
            if self._held:
                self._release(step)
        except ProtocolError as exc:
            self._upstream_failed(step, exc)
        return step

    def listeners_opened(self) -> UpstreamStep:
        """Release the responses held for the listeners the last step asked for
        (whether or not they could be opened: an endpoint without one is removed)."""
        step = UpstreamStep()
        try:
            self._release(step)
        except ProtocolError as exc:
            self._upstream_failed(step, exc)
        return step

    def _upstream_failed(self, step: UpstreamStep, exc: ProtocolError) -> None:
        """Bad bytes from the broker: nothing of this step reaches the client."""
        self._held = []
        step.to_client = []
        step.responses = []
        step.close = SessionClose("upstream", exc.reason, str(exc))

    def _walk_responses(self, frames: list[memoryview], now: float, step: UpstreamStep) -> set[int]:
        """Match each frame to its request and walk it; learn the nodes it names.

        Returns the nodes that need a listener before any of it may be sent.
        """
        needed: set[int] = set()
        mapping = self.mapping
        held = self._held
        for frame in frames:
            if len(frame) < 4:
                raise MalformedMessage("response shorter than a correlation id")
            corr = _corr_id(frame, 0)[0]
            req = self.inflight.pop(corr)
            if req is None:
                raise MalformedMessage(
                    f"response with correlation id {corr} that no request is waiting for",
                    reason="unexpected_correlation_id",
                )
            key = req.api_key
            walked: WalkResult | None = None
            if key in WALKED_RESPONSES:
                _, body = parse_response_header(frame, req.header_version)
                walked = walk(frame, body, key, req.version, False)
                # A broker's client listener says where the node is dialled from now on;
                # the KRaft quorum messages (KIP-853) name controller listeners, which
                # are recorded only for a node nothing else has named.
                authoritative = key in CLIENT_LISTENER_RESPONSES
                for ep in walked.endpoints:
                    node_id = ep.node_id
                    if node_id is None or not mapping.is_mappable(node_id):
                        continue
                    if mapping.learn(node_id, ep.host, ep.port, authoritative):
                        step.learned.append(NodeLearned(node_id, ep.host, ep.port))
                    if mapping.needs_listener(node_id):
                        needed.add(node_id)
            held.append(_Held(req, frame, walked, now - req.received))
        return needed

    def _client_view(self, ep: Endpoint) -> tuple[str, int] | None:
        node_id = ep.node_id
        if node_id is None:
            return None
        return self.mapping.kproxy_address(node_id)

    def _release(self, step: UpstreamStep) -> None:
        held, self._held = self._held, []
        out = step.to_client
        seen = step.responses
        mapping = self.mapping
        for req, frame, walked, upstream_seconds in held:
            key = req.api_key
            size = len(frame)
            leaders = None if walked is None else walked.leaders
            nodes = _NO_NODES
            rewritten = removed = 0
            if walked is not None and walked.endpoints:
                rw = rewrite(frame, walked.endpoints, self._client_view)
                out.extend(rw.chunks)
                size, rewritten, removed = rw.size, len(rw.rewritten), len(rw.removed)
                for ep in rw.removed:
                    if ep.node_id is not None and not mapping.is_mappable(ep.node_id):
                        step.unmapped.append(ep.node_id)
                if leaders:
                    nodes = frozenset(e.node_id for e in walked.endpoints if e.node_id is not None)
            elif key == API_VERSIONS and (clamped := clamp_api_versions(frame, 4, req.version)):
                out.extend(clamped.chunks)
                step.clamped.append((len(clamped.dropped), len(clamped.lowered)))
            else:
                out.append(_pack_size(size))
                out.append(frame)
            seen.append(
                ResponseSeen(
                    key,
                    req.version,
                    req.client_id,
                    size,
                    req.received,
                    upstream_seconds,
                    leaders,
                    nodes,
                    rewritten,
                    removed,
                )
            )
        if (
            self._paused_for_inflight
            and len(self.inflight) < self.limits.max_in_flight_requests // 2 + 1
        ):
            self._paused_for_inflight = False
            step.resume_reading = True
