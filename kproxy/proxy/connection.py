"""Transport glue for one client connection and its own upstream connection.

Every decision about the bytes is the session's (`kproxy.session.ProxySession`); these
two asyncio Protocols connect, move bytes, apply backpressure and close. When one
side's transport asks to pause writing, the other side stops reading until it resumes,
so memory per connection is bounded by the frame limit, the write-buffer high-water
mark and the in-flight limit, never by how slow a peer is.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import cast

from kproxy.proxy.discovery import describe
from kproxy.proxy.services import ConnectionServices
from kproxy.session import ProxySession, SessionClose, UpstreamStep

log = logging.getLogger("kproxy.connection")
_now = time.perf_counter


class ClientConnection(asyncio.Protocol):
    """The client side of a proxied connection; owns its upstream side."""

    def __init__(self, services: ConnectionServices, listener: str, node_id: int | None) -> None:
        self.services = services
        self.listener = listener
        self.node_id = node_id
        self.session = ProxySession(services.addresses, services.limits)
        self.transport: asyncio.Transport | None = None
        self.upstream: UpstreamConnection | None = None
        self.closed = False
        self.peer = "?"
        self._client_paused = False  # we paused reading from the client
        self._paused_for_inflight = False  # too many requests waiting for responses
        self._upstream_full = False  # the upstream transport's write buffer is full
        self._connect_task: asyncio.Task[None] | None = None
        # Bytes that arrived before the upstream connection was up (uvloop starts
        # reading after connection_made even when it paused reading).
        self._early: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=self.services.write_buffer_high)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        if not self.services.registry.opened(self):
            return
        # Nothing is read until the upstream side is there to take it.
        transport.pause_reading()
        self._client_paused = True
        self._connect_task = asyncio.get_running_loop().create_task(self._connect_upstream())

    async def _connect_upstream(self) -> None:
        svc = self.services
        if self.node_id is None:
            targets = svc.addresses.bootstrap_order()
        else:
            target = svc.addresses.node_dial_address(self.node_id)
            if target is None:
                await svc.refresh_metadata()
                target = svc.addresses.node_dial_address(self.node_id)
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
                    svc.connect_timeout,
                )
            except (TimeoutError, OSError) as exc:
                reason = "timeout" if isinstance(exc, TimeoutError) else "refused"
                svc.observer.upstream_connect_failed(f"{host}:{port}", reason)
                log.warning(
                    "upstream %s:%d unreachable (%s) for client %s",
                    host,
                    port,
                    describe(exc),
                    self.peer,
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
        step = self.session.client_bytes(data, _now())
        if step.to_upstream:
            upstream.transport.writelines(step.to_upstream)
        observer = self.services.observer
        for api_key, size in step.requests:
            observer.frame(api_key, "request", size)
        if step.close is not None:
            self.fail(step.close)
        elif step.pause_reading:
            self._paused_for_inflight = True
            self._pause_client()

    def upstream_bytes(self, data: bytes) -> None:
        transport = self.transport
        if transport is None or self.closed:
            return
        svc = self.services
        step = self.session.upstream_bytes(data, _now())
        while step.nodes_needing_listeners:
            self._apply_learned(step)
            svc.listeners.open_nodes(step.nodes_needing_listeners)
            step = self.session.listeners_opened()
        self._apply_learned(step)
        if step.close is not None:
            self.fail(step.close)
            return
        if not step.responses:
            return
        transport.writelines(step.to_client)
        svc.observe_responses(step, self.node_id, _now())
        if step.resume_reading:
            self._paused_for_inflight = False
            self._resume_client()

    def _apply_learned(self, step: UpstreamStep) -> None:
        reports = self.services.reports
        for node_id, host, port in step.learned:
            reports.learned(node_id, host, port)
        step.learned = []

    def pause_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        pending = self.session.client_bytes_pending
        if not self.closed and pending:
            self.services.observer.frame_error("client", "truncated_frame")
            log.warning(
                "client %s on %s closed in the middle of an incomplete frame (%d bytes)",
                self.peer,
                self.listener,
                pending,
            )
            self.close("client_truncated_frame")
            return
        self.close("client_reset" if exc else "client_closed")

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

    def fail(self, why: SessionClose) -> None:
        """Bad bytes: close this pair with a log line and a metric; nothing else notices."""
        self.services.observer.frame_error(why.side, why.reason)
        log.warning(
            "closing client %s on %s: bad %s frame (%s): %s",
            self.peer,
            self.listener,
            why.side,
            why.reason,
            why.message,
        )
        self.close(why.cause)

    @property
    def has_in_flight(self) -> bool:
        return bool(self.session.inflight)

    def close(self, cause: str) -> None:
        if self.closed:
            return
        self.closed = True
        if self._connect_task is not None and not self._connect_task.done():
            self._connect_task.cancel()
        if self.transport is not None:
            self.transport.close()
        if self.upstream is not None:
            self.upstream.close()
        self.services.registry.closed(self, cause)


class UpstreamConnection(asyncio.Protocol):
    """kproxy's connection to one broker, on behalf of one client connection."""

    def __init__(self, client: ClientConnection) -> None:
        self.client = client
        self.transport: asyncio.Transport | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=self.client.services.write_buffer_high)

    def data_received(self, data: bytes) -> None:
        self.client.upstream_bytes(data)

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
            inflight = len(client.session.inflight)
            if inflight:
                log.warning(
                    "upstream for client %s closed with %d request(s) in flight",
                    client.peer,
                    inflight,
                )
            client.close("upstream_reset" if exc else "upstream_closed")

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
