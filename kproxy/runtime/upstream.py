"""kproxy's connection to a broker on behalf of one client connection, and its dialling.

A client's broker connection is dialled only once the client has sent a whole first
request (or the first bytes of a large one): a client that connects and says nothing
costs kproxy one socket, not two, and reaches no broker.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Protocol, cast

from kproxy.protocol.hostport import format_host_port
from kproxy.runtime.describe import describe
from kproxy.runtime.mapping import DialTarget
from kproxy.runtime.ratelog import RateLimitedLog
from kproxy.runtime.resolution import DIAL_OVERRIDES_HINT
from kproxy.runtime.services import ConnectionServices
from kproxy.runtime.tls import failure_reason as tls_failure_reason
from kproxy.runtime.tls import failure_text as tls_failure_text
from kproxy.runtime.write_buffer import limit_write_buffer
from kproxy.session import ProxySession

log = logging.getLogger("kproxy.connection")
# A client retrying against a dead broker would write a warning per attempt: one per
# address per 10 s, with the count of the others.
_unreachable = RateLimitedLog(log)


class ClientConnection(Protocol):
    """What the broker side needs of its client side (`kproxy.runtime.client`)."""

    services: ConnectionServices
    session: ProxySession
    listener: str
    node_id: int | None
    controller: bool  # a KRaft controller's port (`quorum.controllers`)
    closed: bool

    @property
    def peer(self) -> str: ...

    def upstream_bytes(self, data: bytes) -> None: ...

    def upstream_full(self, full: bool) -> None: ...

    def close(self, cause: str) -> None: ...


FD_EXHAUSTED = (errno.EMFILE, errno.ENFILE)  # descriptors ran out


def failure_reason(exc: BaseException) -> str:
    """The bounded label of a failed dial, for kproxy_upstream_connect_failures_total."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, ssl.SSLError):
        return "tls"
    if isinstance(exc, OSError) and exc.errno in FD_EXHAUSTED:
        return "fd_exhausted"
    return "refused"


class UpstreamConnection:
    """The broker side of a proxied connection: an `asyncio.Protocol` in all but name
    (its data_received is an attribute, which the typed base class would refuse; no
    base class, as for `kproxy.runtime.client.ClientConnection`)."""

    __slots__ = ("_paused", "client", "data_received", "transport")

    # What the broker sends goes straight to the client connection: the loop keeps the
    # protocol's data_received (uvloop binds it once, as it makes the transport), and a method
    # here that only passed the bytes on was a Python call more on every response.
    data_received: Callable[[bytes], None]

    def __init__(self, client: ClientConnection) -> None:
        self.client = client
        self.data_received = client.upstream_bytes
        self.transport: asyncio.Transport | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        limit_write_buffer(transport, self.client.services.write_buffer_high)

    def eof_received(self) -> bool | None:
        """The broker closed its side: the transport closes (`connection_lost` follows)."""
        return None

    def pause_writing(self) -> None:
        self.client.upstream_full(True)

    def resume_writing(self) -> None:
        self.client.upstream_full(False)

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
                    "upstream for client %s closed with %d request(s) in flight (%s)",
                    client.peer,
                    inflight,
                    describe(exc) if exc is not None else "closed by the broker",
                )
            client.close("upstream_reset" if exc else "upstream_closed")

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def dial(client: ClientConnection) -> UpstreamConnection | None:
    """Connect to the broker the client's listener stands for (any bootstrap server for
    the bootstrap listener); None, with the client closed, when none answers."""
    svc = client.services
    fence = svc.fence
    if fence is not None:
        # A switchover is moving the cluster: no connection reaches either cluster until
        # it is done, then this one dials the new cluster (kproxy.runtime.switchover).
        svc.observer.switchover_held()
        await fence.wait()
        if client.closed:
            return None
    targets: list[DialTarget]
    tls = svc.upstream_tls
    if client.controller and svc.quorum is not None and client.node_id is not None:
        target = svc.quorum.dial_target(client.node_id)
        targets = [] if target is None else [target]
        tls = None
    elif client.node_id is None:
        targets = svc.addresses.bootstrap_order()
    else:
        target = svc.addresses.node_dial_target(client.node_id)
        if target is None:
            await svc.discovery.refresh()
            target = svc.addresses.node_dial_target(client.node_id)
        if target is None:
            log.warning(
                "client %s on %s: node %d is unknown to the cluster; closing",
                client.peer,
                client.listener,
                client.node_id,
            )
            client.close("unknown_node")
            return None
        targets = [target]
    loop = asyncio.get_running_loop()
    for host, port, name in targets:
        if client.closed:
            return None
        address = format_host_port(host, port)
        try:
            _, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: cast(asyncio.BaseProtocol, UpstreamConnection(client)),
                    host,
                    port,
                    ssl=tls,
                    server_hostname=name if tls is not None else None,
                ),
                svc.connect_timeout,
            )
        except (TimeoutError, OSError) as exc:
            svc.observer.upstream_connect_failed(address, failure_reason(exc))
            if isinstance(exc, ssl.SSLError):
                svc.observer.tls_handshake_failed("upstream", tls_failure_reason(exc))
                why = f"TLS handshake with {name} failed: {tls_failure_text(exc)}"
            elif isinstance(exc, socket.gaierror):
                why = f"{describe(exc)}: {host} does not resolve here; {DIAL_OVERRIDES_HINT}"
            else:
                why = describe(exc)
            _unreachable.warning(
                address, "upstream %s unreachable for client %s: %s", address, client.peer, why
            )
            continue
        upstream = cast(UpstreamConnection, protocol)
        if client.closed:
            upstream.close()
            return None
        return upstream
    client.close("upstream_unreachable")
    return None
