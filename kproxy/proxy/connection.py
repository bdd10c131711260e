"""One client connection and its own upstream connection, as two asyncio Protocols.

Requests flow client -> upstream with only their header parsed (and the few requests
that carry endpoints rewritten back to the cluster's addresses); responses flow
upstream -> client, walked when their (api, version) can carry endpoints or leadership,
rewritten so that only kproxy addresses reach the client, and observed afterwards.

Backpressure is explicit in both directions: when one side's transport asks the
protocol to pause writing, the other side stops reading until it resumes. Memory per
connection is bounded by the frame limit, the write-buffer high-water mark and the
in-flight request limit, never by how slow a peer is.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, cast

from kproxy.protocol.api_versions import clamp_api_versions
from kproxy.protocol.apis import (
    API_VERSIONS,
    CLIENT_LISTENER_RESPONSES,
    PRODUCE,
    SASL_HANDSHAKE,
    WALKED_REQUESTS,
    WALKED_RESPONSES,
    api_name,
)
from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.errors import MalformedMessage, ProtocolError, UnsupportedVersion
from kproxy.protocol.frames import FrameMore, FrameReader, FrameStart
from kproxy.protocol.headers import RequestHeader, parse_request_header, parse_response_header
from kproxy.protocol.primitives import INT32
from kproxy.protocol.requests import produce_acks
from kproxy.protocol.rewriter import rewrite
from kproxy.protocol.walker import WalkResult, can_walk, walk

if TYPE_CHECKING:
    from kproxy.proxy.server import ProxyContext

log = logging.getLogger("kproxy.connection")
_pack_size = INT32.pack
_now = time.perf_counter
# Requests at least this large (Produce batches) are forwarded as they arrive rather than
# gathered whole first: cut-through saves a copy and the time to receive the whole frame
# before sending its first byte. Their header and Produce acks are within these bytes
# (a client id is at most 32,767 bytes, a transactional id likewise).
STREAM_REQUESTS_AFTER = 65536


class InFlight:
    __slots__ = ("api_key", "client_id", "header_version", "received", "sent", "version")

    def __init__(
        self,
        api_key: int,
        version: int,
        header_version: int,
        client_id: str | None,
        received: float,
    ) -> None:
        self.api_key = api_key
        self.version = version
        self.header_version = header_version
        self.client_id = client_id
        self.received = received
        self.sent = received


class ClientConnection(asyncio.Protocol):
    """The client side of a proxied connection; owns its upstream side."""

    def __init__(self, ctx: ProxyContext, listener: str, node_id: int | None) -> None:
        self.ctx = ctx
        self.listener = listener
        self.node_id = node_id
        self.transport: asyncio.Transport | None = None
        self.upstream: UpstreamConnection | None = None
        self.reader = FrameReader(ctx.max_frame_bytes, stream_after=STREAM_REQUESTS_AFTER)
        self.inflight: CorrelationTable[InFlight] = CorrelationTable()
        self.closed = False
        self.close_cause = ""
        self.peer = "?"
        self._client_paused = False  # we paused reading from the client
        self._paused_for_inflight = False  # too many requests waiting for responses
        self._upstream_full = False  # the upstream transport's write buffer is full
        self._connect_task: asyncio.Task[None] | None = None
        # Bytes that arrived before the upstream connection was up (uvloop starts
        # reading after connection_made even when it paused reading).
        self._early: list[bytes] = []

    # -- asyncio callbacks -------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=self.ctx.write_buffer_high)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.ctx.connection_opened(self)
        # Nothing is read until the upstream side is there to take it.
        transport.pause_reading()
        self._client_paused = True
        self._connect_task = asyncio.get_running_loop().create_task(self._connect_upstream())

    async def _connect_upstream(self) -> None:
        ctx = self.ctx
        if self.node_id is None:
            targets = ctx.book.bootstrap_order()
        else:
            target = ctx.book.node_dial_address(self.node_id)
            if target is None:
                await ctx.refresh_metadata()
                target = ctx.book.node_dial_address(self.node_id)
            if target is None:
                log.warning(
                    "client %s on %s: node %d is unknown to the cluster; closing",
                    self.peer,
                    self.listener,
                    self.node_id,
                )
                self.close("unknown_node")
                return
            targets = [target]
        loop = asyncio.get_running_loop()
        for host, port in targets:
            if self.closed:
                return
            try:
                _, upstream = await asyncio.wait_for(
                    loop.create_connection(lambda: UpstreamConnection(self), host, port),
                    ctx.connect_timeout,
                )
            except (TimeoutError, OSError) as exc:
                reason = "timeout" if isinstance(exc, asyncio.TimeoutError) else "refused"
                ctx.observer.upstream_connect_failed(f"{host}:{port}", reason)
                log.warning(
                    "upstream %s:%d unreachable (%s) for client %s", host, port, exc, self.peer
                )
                continue
            if self.closed:
                upstream.close()
                return
            self.upstream = upstream
            self._client_paused = False
            early, self._early = self._early, []
            for data in early:
                self.data_received(data)
            if self.transport is not None and not self.closed:
                self.transport.resume_reading()
            return
        self.close("upstream_unreachable")

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        upstream = self.upstream
        if upstream is None or upstream.transport is None:
            self._early.append(data)
            if self.transport is not None:
                self.transport.pause_reading()
            return
        try:
            frames = self.reader.feed_through(data)
            if frames:
                out = self._requests(frames)
                upstream.transport.writelines(out)
        except ProtocolError as exc:
            self.fail("client", exc)
            return
        if len(self.inflight) >= self.ctx.max_in_flight and not self._paused_for_inflight:
            self._paused_for_inflight = True
            self._pause_client()

    def _requests(
        self, frames: list[memoryview | FrameStart | FrameMore]
    ) -> list[bytes | memoryview]:
        out: list[bytes | memoryview] = []
        ctx = self.ctx
        now = _now()
        for frame in frames:
            if type(frame) is FrameMore:
                out.append(frame.data)
                continue
            if type(frame) is FrameStart:
                # A large request on its way: unless kproxy must rewrite it, it is passed
                # on as it arrives, its header read from its first bytes.
                hdr = self._admit(frame.head, frame.size, now)
                if hdr is None:
                    self.reader.gather()
                    continue
                out.append(_pack_size(frame.size))
                out.append(frame.head)
                continue
            assert type(frame) is memoryview
            hdr = self._admit(frame, len(frame), now, whole=True)
            assert hdr is not None
            if hdr.api_key in WALKED_REQUESTS and can_walk(hdr.api_key, hdr.api_version, True):
                result = walk(frame, hdr.body_offset, hdr.api_key, hdr.api_version, True)
                if result.endpoints:
                    rw = rewrite(frame, result.endpoints, ctx.map_request_endpoint)
                    out.extend(rw.chunks)
                    continue
            out.append(_pack_size(len(frame)))
            out.append(frame)
        return out

    def _admit(
        self, frame: memoryview, size: int, now: float, whole: bool = False
    ) -> RequestHeader | None:
        """Check a request's header and record it as in flight.

        For the start of a frame (``whole`` false) that kproxy may have to rewrite,
        nothing is recorded and None is returned: it is read again when whole.
        """
        hdr = parse_request_header(frame)
        key = hdr.api_key
        if not whole and key in WALKED_REQUESTS:
            return None
        if not hdr.known:
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
        ctx = self.ctx
        versions = ctx.header_versions(key, hdr.api_version)
        ctx.observer.frame(key, "request", size)
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

    def responses(self, frames: list[memoryview]) -> None:
        """Frames from upstream: rewrite, forward, then observe."""
        transport = self.transport
        if transport is None or self.closed:
            return
        ctx = self.ctx
        out: list[bytes | memoryview] = []
        seen: list[tuple[InFlight, WalkResult | None, int, int, int]] = []
        now = _now()
        for frame in frames:
            if len(frame) < 4:
                raise MalformedMessage("response shorter than a correlation id")
            corr = INT32.unpack_from(frame, 0)[0]
            req = self.inflight.pop(corr)
            if req is None:
                raise MalformedMessage(
                    f"response with correlation id {corr} that no request is waiting for",
                    reason="unexpected_correlation_id",
                )
            key = req.api_key
            if key in WALKED_RESPONSES:
                _, body = parse_response_header(frame, req.header_version)
                walked = walk(frame, body, key, req.version, False)
                if walked.endpoints:
                    mapping = (
                        ctx.map_client_endpoint
                        if key in CLIENT_LISTENER_RESPONSES
                        else ctx.map_quorum_endpoint
                    )
                    rw = rewrite(frame, walked.endpoints, mapping)
                    out.extend(rw.chunks)
                    seen.append((req, walked, len(rw.rewritten), len(rw.removed), rw.size))
                    continue
                seen.append((req, walked, 0, 0, len(frame)))
            elif key == API_VERSIONS:
                clamped = clamp_api_versions(frame, 4, req.version)
                if clamped is not None:
                    out.extend(clamped.chunks)
                    ctx.observer.api_versions_clamped(len(clamped.dropped), len(clamped.lowered))
                    seen.append((req, None, 0, 0, len(frame)))
                    continue
                seen.append((req, None, 0, 0, len(frame)))
            else:
                seen.append((req, None, 0, 0, len(frame)))
            out.append(_pack_size(len(frame)))
            out.append(frame)
        transport.writelines(out)
        done = _now()
        ctx.mark_cluster_reached()
        obs = ctx.observer
        for req, result, rewritten, removed, size in seen:
            obs.frame(req.api_key, "response", size)
            obs.response(
                req.api_key, req.version, req.client_id, done - req.received, now - req.sent
            )
            if result is not None and result.leaders:
                nodes = frozenset(e.node_id for e in result.endpoints if e.node_id is not None)
                obs.leaders(req.api_key, req.client_id, self.node_id, result.leaders, nodes)
            if rewritten or removed:
                obs.endpoints(req.api_key, rewritten, removed)
        if self._paused_for_inflight and len(self.inflight) < self.ctx.max_in_flight // 2 + 1:
            self._paused_for_inflight = False
            self._resume_client()

    def pause_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed and self.reader.buffered:
            self.ctx.observer.frame_error("client", "truncated_frame")
            log.warning(
                "client %s on %s closed in the middle of an incomplete frame (%d bytes)",
                self.peer,
                self.listener,
                self.reader.buffered,
            )
            self.close("client_truncated_frame")
            return
        self.close(self.close_cause or ("client_reset" if exc else "client_closed"))

    # -- helpers ---------------------------------------------------------------------------
    def _pause_client(self) -> None:
        if not self._client_paused and self.transport is not None:
            self._client_paused = True
            self.transport.pause_reading()

    def _resume_client(self) -> None:
        if (
            self._client_paused
            and not self._paused_for_inflight
            and not self._upstream_full
            and self.transport is not None
        ):
            self._client_paused = False
            self.transport.resume_reading()

    def fail(self, side: str, exc: ProtocolError) -> None:
        """Bad bytes: close this pair with a log line and a metric; nothing else notices."""
        self.ctx.observer.frame_error(side, exc.reason)
        log.warning(
            "closing client %s on %s: bad %s frame (%s): %s",
            self.peer,
            self.listener,
            side,
            exc.reason,
            exc,
        )
        self.close(f"{side}_{exc.reason}")

    def close(self, cause: str) -> None:
        if self.closed:
            return
        self.closed = True
        self.close_cause = cause
        if self._connect_task is not None and not self._connect_task.done():
            self._connect_task.cancel()
        if self.transport is not None:
            self.transport.close()
        if self.upstream is not None:
            self.upstream.close()
        self.ctx.connection_closed(self, cause)


class UpstreamConnection(asyncio.Protocol):
    """kproxy's connection to one broker, on behalf of one client connection."""

    def __init__(self, client: ClientConnection) -> None:
        self.client = client
        self.transport: asyncio.Transport | None = None
        self.reader = FrameReader(client.ctx.max_frame_bytes)
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=self.client.ctx.write_buffer_high)

    def data_received(self, data: bytes) -> None:
        client = self.client
        try:
            frames = self.reader.feed(data)
            if frames:
                client.responses(frames)
        except ProtocolError as exc:
            client.fail("upstream", exc)

    def pause_writing(self) -> None:
        self.client._upstream_full = True
        self.client._pause_client()

    def resume_writing(self) -> None:
        self.client._upstream_full = False
        self.client._resume_client()

    def pause_reading(self) -> None:
        if not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        client = self.client
        if not client.closed:
            if client.inflight:
                log.warning(
                    "upstream for client %s closed with %d request(s) in flight",
                    client.peer,
                    len(client.inflight),
                )
            client.close("upstream_reset" if exc else "upstream_closed")

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
