"""The listening sockets: the bootstrap port, one port per node, one per controller.

A node's listener is bound synchronously, before the response that named the node is
written, so a client that connects right after it is queued by the kernel; serving
starts a moment later on the event loop. A node's port that cannot be bound (another
process holds it) is tried again with backoff until it can: meanwhile `/readyz` says
which and why (`failures`), and clients are told of no address for that node.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, cast

from kproxy.protocol.hostport import format_host_port
from kproxy.runtime.describe import describe
from kproxy.runtime.mapping import AddressMap
from kproxy.runtime.quorum import QuorumMap, controller_listener_name

log = logging.getLogger("kproxy.listeners")

BOOTSTRAP = "bootstrap"
# A node port that could not be bound is tried again after this, doubling up to the cap.
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 30.0
# What a connection accepted on a listener is given to: kproxy's protocols subclass no
# asyncio class (`kproxy.runtime.client` says why); the loops need none.
ProtocolFactory = Callable[[str, "int | None"], object]


class Listener:
    """One listening socket: the bootstrap port or one node's port."""

    def __init__(self, name: str, node_id: int | None, port: int, sock: socket.socket) -> None:
        self.name = name
        self.node_id = node_id
        self.port = port
        self.sock = sock
        self.server: asyncio.AbstractServer | None = None
        self.state = "binding"  # binding, serving, failed, closed
        self.error: str | None = None  # why a failed one could not be bound


class ListenerSet:
    """Every listener of one kproxy process, keyed by name (`bootstrap`, `node-N`,
    `controller-N`)."""

    def __init__(
        self,
        bind_host: str,
        addresses: AddressMap,
        factory: ProtocolFactory,
        bind_failed: Callable[[str], None] = lambda name: None,
        reuse_port: bool = False,
    ) -> None:
        self.bind_host = bind_host
        # runtime.workers: every worker binds every port; the kernel spreads the
        # connections over the workers listening on it (SO_REUSEPORT).
        self.reuse_port = reuse_port
        self.addresses = addresses
        self.factory = factory
        self.bind_failed = bind_failed  # counted (kproxy_listener_bind_failures_total)
        self.by_name: dict[str, Listener] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def _bind(self, port: int) -> socket.socket:
        infos = socket.getaddrinfo(
            self.bind_host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, _, _, _, addr = infos[0]
        # IPPROTO_TCP stated, not left 0: a connection accepted here inherits it, and the
        # standard asyncio loop turns Nagle's algorithm off only on sockets that name it
        # (`base_events._set_nodelay`). With Nagle on, the last small write of a burst
        # waits for the peer's delayed ACK (40 ms on Linux). uvloop sets TCP_NODELAY
        # on every TCP transport either way.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if self.reuse_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(addr)
            sock.listen(1024)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        return sock

    def open(self, node_id: int | None, port: int) -> Listener | None:
        """Open a listener now, or return the one already open (None if it failed)."""
        if node_id is None:
            return self._open(BOOTSTRAP, None, port, self.addresses.bootstrap_bound)
        return self._open(
            f"node-{node_id}",
            node_id,
            port,
            lambda bound: self.addresses.listener_bound(node_id, bound),
            self.addresses.listener_failed,
        )

    def failures(self) -> list[Listener]:
        """The listeners kproxy needs and could not open (being retried)."""
        return [lst for lst in self.by_name.values() if lst.state == "failed"]

    def open_controller(self, quorum: QuorumMap, node_id: int, port: int) -> Listener | None:
        """A KRaft controller's port (`quorum.controllers`), opened at start."""
        return self._open(
            controller_listener_name(node_id),
            node_id,
            port,
            lambda bound: quorum.listener_bound(node_id, bound),
        )

    def _open(
        self,
        name: str,
        node_id: int | None,
        port: int,
        bound: Callable[[int], None],
        failed: Callable[[int], None] | None = None,
    ) -> Listener | None:
        existing = self.by_name.get(name)
        if existing is not None:
            return existing if existing.state != "failed" else None
        try:
            sock = self._bind(port)
        except OSError as exc:
            dead = Listener(name, node_id, port, socket.socket())
            dead.sock.close()
            dead.state = "failed"
            dead.error = describe(exc)
            self.by_name[name] = dead
            self.bind_failed(name)
            retried = failed is not None and node_id is not None
            log.error(
                "cannot listen on %s for %s: %s%s",
                format_host_port(self.bind_host, port),
                name,
                dead.error,
                "; trying again until it can" if retried else "",
            )
            if failed is not None and node_id is not None:
                failed(node_id)
                self._spawn(self._retry(dead, bound))
            return None
        return self._listening(name, node_id, sock, bound)

    def _listening(
        self, name: str, node_id: int | None, sock: socket.socket, bound: Callable[[int], None]
    ) -> Listener:
        # Port 0 means an OS-chosen port (demo and tests): clients are told the real one.
        actual_port = sock.getsockname()[1]
        listener = Listener(name, node_id, actual_port, sock)
        self.by_name[name] = listener
        bound(actual_port)
        self._spawn(self._serve(listener))
        log.info("listening on %s for %s", format_host_port(self.bind_host, actual_port), name)
        return listener

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _retry(self, dead: Listener, bound: Callable[[int], None]) -> None:
        """Bind a node's port again, with backoff, until it can (or kproxy stops); then
        serve it, and clients are told of the node's address from then on."""
        delay = RETRY_FIRST_SECONDS
        while True:
            await asyncio.sleep(delay)
            if self.by_name.get(dead.name) is not dead or dead.state != "failed":
                return  # stopped, or closed
            try:
                sock = self._bind(dead.port)
            except OSError as exc:
                dead.error = describe(exc)
                self.bind_failed(dead.name)
                delay = min(delay * 2, RETRY_MAX_SECONDS)
                continue
            if dead.node_id is not None:
                self.addresses.failed_listeners.discard(dead.node_id)
            self._listening(dead.name, dead.node_id, sock, bound)
            return

    def open_nodes(self, node_ids: Iterable[int]) -> None:
        for node_id in node_ids:
            port = self.addresses.port_for_node(node_id)
            if port is not None:
                self.open(node_id, port)

    async def _serve(self, listener: Listener) -> None:
        loop = asyncio.get_running_loop()
        name, node_id = listener.name, listener.node_id
        factory = self.factory
        listener.server = await loop.create_server(
            lambda: cast(asyncio.BaseProtocol, factory(name, node_id)), sock=listener.sock
        )
        if listener.state == "binding":
            listener.state = "serving"

    def get(self, name: str) -> Listener | None:
        return self.by_name.get(name)

    def stop_accepting(self) -> None:
        for listener in self.by_name.values():
            if listener.server is not None:
                listener.server.close()
            elif listener.state != "failed":
                listener.sock.close()
            listener.state = "closed"  # a failed one is retried no more
        for task in list(self._tasks):
            task.cancel()

    async def wait_closed(self) -> None:
        for listener in self.by_name.values():
            if listener.server is not None:
                await listener.server.wait_closed()
