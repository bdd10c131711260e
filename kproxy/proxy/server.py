"""The proxy: listeners, node mapping, cluster discovery and graceful shutdown."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from kproxy.protocol.apis import header_versions
from kproxy.protocol.errors import ProtocolError, UnsupportedVersion
from kproxy.protocol.frames import FrameReader
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.requests import metadata_v1_request
from kproxy.protocol.walker import Endpoint, walk
from kproxy.proxy.addresses import AddressBook, join_host_port
from kproxy.proxy.connection import ClientConnection
from kproxy.proxy.observer import ProxyObserver

if TYPE_CHECKING:
    from kproxy.config import Settings

log = logging.getLogger("kproxy.server")

BOOTSTRAP = "bootstrap"
METADATA_REFRESH_SECONDS = 30.0


class Listener:
    """One listening socket: the bootstrap port or one node's port."""

    def __init__(self, name: str, node_id: int | None, port: int, sock: socket.socket) -> None:
        self.name = name
        self.node_id = node_id
        self.port = port
        self.sock = sock
        self.server: asyncio.AbstractServer | None = None
        self.state = "binding"


class ProxyContext:
    """State shared by every connection of one kproxy process."""

    def __init__(self, settings: Settings, observer: ProxyObserver | None = None) -> None:
        self.settings = settings
        self.observer = observer or ProxyObserver()
        cluster = settings.cluster
        self.book = AddressBook(cluster)
        lst = settings.listeners
        self.bind_host = lst.bind_host
        self.advertised_host = lst.advertised_host
        self.max_frame_bytes = settings.limits.max_frame_bytes
        self.write_buffer_high = settings.limits.write_buffer_high_bytes
        self.max_in_flight = settings.limits.max_in_flight_requests
        self.connect_timeout = float(cluster.connect_timeout_seconds)
        self.listeners: dict[str, Listener] = {}
        self.connections: set[ClientConnection] = set()
        self.cluster_reached = False
        self.accepting = True
        self.unmappable_logged: set[int] = set()
        self._refresh_lock: asyncio.Lock | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.observer.attached(self)

    # -- mapping ------------------------------------------------------------------------------
    @staticmethod
    def header_versions(api_key: int, version: int) -> tuple[int, int]:
        hv = header_versions(api_key, version)
        if hv is None:
            raise UnsupportedVersion(f"api {api_key} v{version} is unknown")
        return hv

    def port_for_node(self, node_id: int) -> int | None:
        port: int | None = self.settings.listeners.port_for_node(node_id)
        return port

    def map_client_endpoint(self, ep: Endpoint) -> tuple[str, int] | None:
        """The kproxy address a client must see for a broker's client listener, or None.

        Such an endpoint also says where the node is dialled from now on.
        """
        return self._map_response_endpoint(ep, dial_here=True)

    def map_quorum_endpoint(self, ep: Endpoint) -> tuple[str, int] | None:
        """The kproxy address for a KRaft controller endpoint (KIP-853), or None.

        It names a controller listener, not where clients reach the node: it is dialled
        only for a node nothing else has told kproxy about.
        """
        return self._map_response_endpoint(ep, dial_here=False)

    def _map_response_endpoint(self, ep: Endpoint, dial_here: bool) -> tuple[str, int] | None:
        node_id = ep.node_id
        if node_id is None:
            return None
        port = self.port_for_node(node_id)
        if port is None:
            if node_id not in self.unmappable_logged:
                self.unmappable_logged.add(node_id)
                log.error(
                    "node %d has no kproxy port (max_node_id %d, no override): "
                    "its endpoints are removed from responses",
                    node_id,
                    self.settings.listeners.max_node_id,
                )
            return None
        learn = dial_here or node_id not in self.book.advertised
        if learn and self.book.learn(node_id, ep.host, ep.port):
            adv = join_host_port(ep.host, ep.port)
            dial = join_host_port(*self.book.dial_address(ep.host, ep.port))
            self.observer.node_discovered(node_id, dial, adv)
            log.info("node %d is at %s (dialled as %s)", node_id, adv, dial)
        listener = self.ensure_listener(node_id, port)
        if listener is None:
            return None
        # Port 0 means an OS-chosen port per node (demo and tests); clients are told the
        # port the listener really got.
        return self.advertised_host, listener.port

    def map_request_endpoint(self, ep: Endpoint) -> tuple[str, int] | None:
        """Requests travel to the cluster: kproxy's own addresses become the real ones."""
        if ep.host == self.advertised_host:
            for listener in self.listeners.values():
                if listener.port == ep.port and listener.node_id is not None:
                    adv = self.book.advertised.get(listener.node_id)
                    if adv is not None:
                        return adv
        return ep.host, ep.port

    # -- listeners -----------------------------------------------------------------------------
    def _bind(self, port: int) -> socket.socket:
        infos = socket.getaddrinfo(
            self.bind_host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, _, _, _, addr = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
            sock.listen(1024)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        return sock

    def ensure_listener(self, node_id: int | None, port: int) -> Listener | None:
        """Open a listener now (synchronously bound, so a client that connects right
        after the response that named it is queued by the kernel), or return it."""
        name = BOOTSTRAP if node_id is None else f"node-{node_id}"
        existing = self.listeners.get(name)
        if existing is not None:
            return existing if existing.state != "failed" else None
        try:
            sock = self._bind(port)
        except OSError as exc:
            log.error("cannot listen on %s:%d for %s: %s", self.bind_host, port, name, exc)
            failed = Listener(name, node_id, port, socket.socket())
            failed.sock.close()
            failed.state = "failed"
            self.listeners[name] = failed
            return None
        actual_port = sock.getsockname()[1]
        listener = Listener(name, node_id, actual_port, sock)
        self.listeners[name] = listener
        self._spawn(self._serve(listener))
        log.info("listening on %s:%d for %s", self.bind_host, actual_port, name)
        return listener

    async def _serve(self, listener: Listener) -> None:
        loop = asyncio.get_running_loop()
        node_id = listener.node_id
        name = listener.name
        listener.server = await loop.create_server(
            lambda: ClientConnection(self, name, node_id), sock=listener.sock
        )
        listener.state = "serving"

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- connections -----------------------------------------------------------------------------
    def connection_opened(self, conn: ClientConnection) -> None:
        if not self.accepting:
            conn.close("shutting_down")
            return
        self.connections.add(conn)
        self.observer.connection_opened(conn.listener)

    def connection_closed(self, conn: ClientConnection, cause: str) -> None:
        if conn in self.connections:
            self.connections.discard(conn)
            self.observer.connection_closed(conn.listener, cause)

    def mark_cluster_reached(self) -> None:
        if not self.cluster_reached:
            self.cluster_reached = True
            self.observer.cluster_reached()

    # -- cluster discovery -------------------------------------------------------------------------
    async def refresh_metadata(self) -> bool:
        """Ask the cluster for its brokers (Metadata v1, no topics) and open their listeners."""
        if self._refresh_lock is None:
            self._refresh_lock = asyncio.Lock()
        async with self._refresh_lock:
            for host, port in self.book.bootstrap_order():
                try:
                    brokers = await asyncio.wait_for(
                        fetch_brokers(host, port, self.max_frame_bytes), self.connect_timeout
                    )
                except (TimeoutError, OSError, ProtocolError) as exc:
                    log.warning("metadata from %s:%d failed: %s", host, port, exc)
                    self.observer.upstream_connect_failed(f"{host}:{port}", "metadata")
                    continue
                for ep in brokers:
                    self.map_client_endpoint(ep)
                self.mark_cluster_reached()
                return True
        return False

    async def _refresh_loop(self) -> None:
        delay = 1.0
        while self.accepting:
            ok = await self.refresh_metadata()
            delay = METADATA_REFRESH_SECONDS if ok else min(delay * 2, METADATA_REFRESH_SECONDS)
            await asyncio.sleep(delay)

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        lst = self.settings.listeners
        if self.ensure_listener(None, lst.bootstrap_port) is None:
            raise OSError(f"cannot listen on {self.bind_host}:{lst.bootstrap_port}")
        await asyncio.sleep(0)  # let the bootstrap server start
        self._spawn(self._refresh_loop())

    @property
    def bootstrap_port(self) -> int:
        return self.listeners[BOOTSTRAP].port

    async def stop(self, grace_seconds: float) -> None:
        """Stop accepting, let in-flight requests finish for the grace period, close."""
        self.accepting = False
        for listener in self.listeners.values():
            if listener.server is not None:
                listener.server.close()
            elif listener.state != "failed":
                listener.sock.close()
            listener.state = "closed"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_seconds
        while loop.time() < deadline and any(c.inflight for c in self.connections):
            await asyncio.sleep(0.05)
        for conn in list(self.connections):
            conn.close("shutdown")
        for task in list(self._tasks):
            task.cancel()
        for listener in self.listeners.values():
            if listener.server is not None:
                await listener.server.wait_closed()


async def fetch_brokers(host: str, port: int, max_frame_bytes: int) -> list[Endpoint]:
    """kproxy's own Metadata request: the cluster's brokers as the bootstrap sees them."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(metadata_v1_request(1))
        await writer.drain()
        frames = FrameReader(max_frame_bytes)
        while True:
            data = await reader.read(65536)
            if not data:
                raise ConnectionError("broker closed the connection before answering")
            got = frames.feed(data)
            if got:
                frame = got[0]
                _, body = parse_response_header(frame, 0)
                return walk(frame, body, 3, 1, False).endpoints
    finally:
        writer.close()
