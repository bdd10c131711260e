"""Transport glue for one client connection: every decision about its bytes is the
session's (`kproxy.session`); this moves them, dials the broker once a first request is
there (`kproxy.runtime.upstream`), holds backpressure both ways and closes. Memory per
connection is bounded by the frame limit, the write-buffer high-water mark and the
in-flight limit, never by how slow a peer is."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Final, cast

from kproxy.protocol.hostport import format_host_port
from kproxy.runtime.proxy_header import take_header, truncated
from kproxy.runtime.quorum import is_controller_listener
from kproxy.runtime.quotas import throttle
from kproxy.runtime.readgate import paused, resumed
from kproxy.runtime.services import ConnectionServices
from kproxy.runtime.tls import TlsServerLayer
from kproxy.runtime.upstream import UpstreamConnection, dial
from kproxy.runtime.write_buffer import limit_write_buffer, write_pieces
from kproxy.session import ClientStep, UpstreamStep
from kproxy.session.identity import ANONYMOUS

log = logging.getLogger("kproxy.connection")
# The steps every connection's reads are made into, one each way, emptied by the session
# for each read: a read's step is done with before the loop calls back for the next
# (nothing here awaits, and no callback of one connection runs inside another's); a step
# made for every read cost a small round trip about a microsecond more.
_CLIENT_STEP: Final = ClientStep()
_UPSTREAM_STEP: Final = UpstreamStep()
_now: Final = time.perf_counter


class ClientConnection:
    """The client side of a proxied connection; owns its upstream side: an
    `asyncio.Protocol` in all but name.

    No asyncio base class: mypyc gives a compiled class with any Python base a
    `__dict__` and a `__weakref__` slot (16 bytes on every connection, idle or not), and
    the loops call a protocol's methods by name (`kproxy.runtime.listeners` casts the
    factory for typeshed's sake)."""

    # Slots: an idle connection's attributes cost a fixed array instead of a dict.
    __slots__ = (
        "_dial_task",
        "_drain_cause",
        "_pause_reasons",
        "_pending",
        "address",
        "closed",
        "controller",
        "draining",
        "first_request_due_from",
        "last_active",
        "listener",
        "node_id",
        "preamble",
        "services",
        "session",
        "tls",
        "transport",
        "unthrottle",
        "upstream",
    )
    # The flags first: mypyc lays attributes out in the order they are declared, and
    # three one-byte flags between pointers took a word each.
    controller: bool
    closed: bool
    draining: bool

    def __init__(self, services: ConnectionServices, listener: str, node_id: int | None) -> None:
        self.services = services
        self.listener = listener
        self.node_id = node_id
        # A controller's port (KIP-853 quorum through kproxy): the controller plane,
        # plaintext both ways, dialled where `quorum.controllers` says.
        self.controller = services.quorum is not None and is_controller_listener(listener)
        self.session = services.new_session(self.controller)
        self.transport: asyncio.Transport | None = None
        self.upstream: UpstreamConnection | None = None
        self.closed = False
        self.draining = False
        # The client's socket address, (host, port) or for IPv6 (host, port, flowinfo,
        # scope_id): the transport's own tuple on the standard loop.
        self.address: tuple[str, int] | tuple[str, int, int, int] | None = None
        # When it opened while no whole request has come (the first-request timeout runs
        # from it); None from then on, the broker dialled (a float kept by every idle
        # connection would be 24 bytes more).
        self.first_request_due_from: float | None = _now()
        self.last_active = self.first_request_due_from
        self._dial_task: asyncio.Task[None] | None = None
        tls = None if self.controller else services.client_tls
        self.tls = TlsServerLayer(tls.context) if tls is not None else None
        self._pause_reasons: tuple[str, ...] = ()  # why the client is not read (readgate)
        self._drain_cause = "shutdown"  # why it drains: shutdown, or max_age
        # Requests read before the broker is there; None once it is (an idle connection
        # holds no empty list).
        self._pending: list[bytes | memoryview] | None = None
        # Reads the client again once a quota's throttle is over (kproxy.runtime.quotas).
        self.unthrottle: asyncio.TimerHandle | None = None
        # A PROXY protocol header's bytes so far (`listeners.proxy_protocol`); None once
        # it was taken, or when none is read.
        self.preamble: bytes | None = (
            b"" if services.proxy_protocol is not None and not self.controller else None
        )

    # -- client side ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        limit_write_buffer(transport, self.services.write_buffer_high)
        self.address = transport.get_extra_info("peername") or None
        self.session.client_host = None if self.address is None else str(self.address[0])
        self.services.registry.opened(self)

    @property
    def peer(self) -> str:
        """host:port of the client, an IPv6 host in brackets, for log lines (formatted
        when logged: a string kept per connection would be 64 bytes every idle one
        holds)."""
        address = self.address
        return "?" if address is None else format_host_port(address[0], address[1])

    @property
    def peer_ip(self) -> str:
        return "?" if self.address is None else str(self.address[0])

    @property
    def principal(self) -> str:
        identity = self.session.identity
        return ANONYMOUS if identity is None else identity.principal

    @property
    def tenant(self) -> str | None:  # its requests were last renamed for (if any)
        return None if self.session.tenant is None else self.session.tenant.name

    @property
    def transactional_ids(self) -> frozenset[str]:  # kproxy.session.transactions
        return frozenset(self.session.transactional_ids or ())

    @property
    def unanswered(self) -> int:  # requests a close now leaves unanswered
        return self.session.unanswered

    @property
    def handshaking(self) -> bool:
        return self.tls is not None and not self.tls.established

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        if self.preamble is not None:  # before TLS and any frame (kproxy.runtime.proxy_header)
            settings = self.services.proxy_protocol
            assert settings is not None
            data = take_header(self, settings, data)
            if not data:
                return
        if self.tls is not None:
            data = self._decrypt(data)
            if not data:
                return
        now = self.last_active = _now()
        svc = self.services
        step = self.session.from_client(data, now, _CLIENT_STEP)
        if step.as_read and not self.draining:  # the commonest read: sent on as it came
            upstream = self.upstream
            if upstream is not None and (to_broker := upstream.transport) is not None:
                to_broker.write(data)
                svc.count_requests(step.requests)
                return
        if step.answers:
            self._write_client(step.answers)
        svc.count_requests(step.requests)
        if self.session.tenant is not None:  # never in the fast lane (session.admission)
            svc.observer.tenant_requests(self.session.tenant.name, step.requests)
        if step.refused_keys:
            svc.refused(self, step.refused_keys)
        if step.close is not None:
            svc.failed(self, step.close)
            return
        if step.held:
            svc.requests_held(self, step.held)
        out = step.to_upstream
        if out:
            upstream = self.upstream
            if len(out) == 1 and upstream is not None and upstream.transport is not None:
                upstream.transport.write(out[0])  # mostly a read forwarded as it came
            else:
                self._to_upstream(out)
        if step.pause_reading:
            self._pause("in_flight")
        if step.throttle_ms:  # over a quota (KIP-219): not read for that long
            self.unthrottle = throttle(
                self._pause, self._resume, self.unthrottle, step.throttle_ms / 1000
            )
        if self.draining and not self.session.streaming_request:
            self._pause("draining")

    def _decrypt(self, data: bytes) -> bytes:
        """TLS from the client: answer the handshake, return the plaintext (b"" for none
        yet, or when the connection ends here)."""
        assert self.tls is not None
        handshaking = not self.tls.established
        received = self.tls.receive(data)
        transport = self.transport
        if received.to_peer and transport is not None:
            transport.write(received.to_peer)
        if received.failure is not None:
            self.services.tls_failed(self, received.failure)
            return b""
        if received.closed:
            self.close("client_closed")
            return b""
        if handshaking and self.tls.established:
            self.session.server_name = self.tls.server_name  # a tenant may be known by it
            if self.services.addresses.sni is not None:
                # SNI: the name the client asked for says which node this connection is
                # for (the handshake already refused any other name).
                self.node_id = self.services.addresses.sni_target(self.tls.server_name)[1]
            subject = self.tls.peer_subject()  # mTLS: the certificate names the principal
            if not self.services.principals.certificate(self, self.session, subject):
                return b""
        return received.plaintext

    def _write_client(self, chunks: list[bytes | memoryview]) -> None:
        transport = self.transport
        if transport is None:
            return
        if self.tls is None:
            if len(chunks) == 1:  # mostly a read sent on as it came
                transport.write(chunks[0])
            else:
                write_pieces(transport, chunks)
        else:
            transport.write(self.tls.send(chunks))

    def _to_upstream(self, chunks: list[bytes | memoryview]) -> None:
        upstream = self.upstream
        if upstream is not None and upstream.transport is not None:
            if len(chunks) == 1:  # mostly a read forwarded as it came
                upstream.transport.write(chunks[0])
            else:
                write_pieces(upstream.transport, chunks)
            return
        if self._pending is None:
            self._pending = []
        self._pending.extend(chunks)
        self._pause("dialling")  # one request's worth, until the broker is there
        if self.first_request_due_from is not None:
            self.first_request_due_from = None
            self._dial_task = asyncio.get_running_loop().create_task(self._dial())

    async def _dial(self) -> None:
        try:
            upstream = await dial(self)
            if upstream is None or self.closed:
                return
            self.upstream = upstream
            pending, self._pending = self._pending, None
            if upstream.transport is not None and pending is not None:
                write_pieces(upstream.transport, pending)
            self._resume("dialling")
        finally:
            # A finished task holds ~0.5 KB for as long as the connection lives.
            self._dial_task = None

    def eof_received(self) -> bool | None:
        """The client closed its side: the transport closes (`connection_lost` follows)."""
        return None

    def pause_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None:
            self.upstream.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed and self.preamble:
            truncated(self)
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

    # -- upstream side ---------------------------------------------------------------------------
    def upstream_bytes(self, data: bytes) -> None:
        transport = self.transport
        if transport is None or self.closed:
            return
        svc = self.services
        now = self.last_active = _now()
        session = self.session
        step = session.from_upstream(data, now, _UPSTREAM_STEP)
        if step.as_read and not self.draining:  # the commonest read: sent on as it came
            out = step.to_client
            if out:  # else a part of a response, kept
                transport.write(out[0] if self.tls is None else self.tls.send(out))
                if svc.relayed:
                    svc.observer.responses_forwarded(step.responses, _now())
                else:
                    svc.observe_responses(step, self.node_id, _now())
            return
        while step.needs_listeners:
            svc.learned(step)
            svc.listeners.open_nodes(step.needs_listeners)
            step = session.listeners_opened(now, step)
        more = step.more
        if more is not None:
            svc.learned(step)
        if step.close is not None:
            svc.failed(self, step.close)
            return
        out = step.to_client
        if not out and not step.responses:
            return  # part of a response, kept
        if len(out) == 1 and self.tls is None:
            transport.write(out[0])  # mostly a read sent on as it came
        else:
            self._write_client(out)
        if more is None and svc.relayed:  # nothing walked or released: its responses alone
            svc.observer.responses_forwarded(step.responses, _now())
        else:
            if more is not None and more.to_upstream:  # requests released by these responses
                self._to_upstream(more.to_upstream)
            svc.observe_responses(step, self.node_id, _now())
        if more is not None and more.refused:
            svc.refused(self, more.refused)
        if more is not None and more.authentications:
            svc.principals.authenticated(self, more.authentications)
        if more is not None and more.audits:
            svc.audited(self, more.audits)
        if step.resume_reading:
            self._resume("in_flight")
        if step.throttle_ms:  # a Fetch response over its quota (KIP-219)
            self.unthrottle = throttle(
                self._pause, self._resume, self.unthrottle, step.throttle_ms / 1000
            )
        if self.draining and not session.answering and not session.streaming_request:
            self.close(self._drain_cause)

    def upstream_full(self, full: bool) -> None:
        if full:
            self._pause("upstream_full")
        else:
            self._resume("upstream_full")

    # -- reading, draining, closing -------------------------------------------------------------
    def _pause(self, reason: str) -> None:
        self._pause_reasons = paused(self.transport, self._pause_reasons, reason)

    def _resume(self, reason: str) -> None:
        if not self.closed:
            self._pause_reasons = resumed(self.transport, self._pause_reasons, reason)

    def drain(self, cause: str = "shutdown") -> None:
        """Shutdown, or the connection's age limit: read no new request, close once every
        forwarded one is answered (a large request already on its way is read to its end
        first), between two responses."""
        if self.draining:
            return
        self.draining = True
        self._drain_cause = cause
        if not self.session.streaming_request:
            if not self.session.answering:
                self.close(cause)
                return
            self._pause("draining")

    def close(self, cause: str) -> None:
        if self.closed:
            return
        self.closed = True
        if self._dial_task is not None and not self._dial_task.done():
            self._dial_task.cancel()
        if self.unthrottle is not None:
            self.unthrottle.cancel()
        if self.transport is not None:
            if self.tls is not None:
                self.transport.write(self.tls.close())
            self.transport.close()
        if self.upstream is not None:
            self.upstream.close()
        self._pending = None
        self.session.close()
        self.services.registry.closed(self, cause)
