"""Cluster discovery: kproxy's own Metadata requests, and what it learns of nodes.

kproxy asks the cluster for its brokers at start and every 30 s, so that every node
has a listener before any client is told about it, and so that `/readyz` can say the
cluster was reached. Nodes are also learned from the responses relayed to clients
(`kproxy.session`): both report through `NodeReports`.
"""

from __future__ import annotations

import asyncio
import logging

from kproxy.describe import describe
from kproxy.hostport import format_host_port
from kproxy.protocol.errors import ProtocolError
from kproxy.protocol.frames import FrameReader
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.requests import metadata_v1_request
from kproxy.protocol.walker import Endpoint, walk
from kproxy.proxy.listeners import ListenerSet
from kproxy.proxy.mapping import AddressMap
from kproxy.proxy.observer import ProxyObserver

log = logging.getLogger("kproxy.discovery")

METADATA_REFRESH_SECONDS = 30.0
METADATA = 3


class NodeReports:
    """Logs and reports what kproxy learns of nodes, once per fact."""

    def __init__(self, addresses: AddressMap, observer: ProxyObserver, max_node_id: int) -> None:
        self.addresses = addresses
        self.observer = observer
        self.max_node_id = max_node_id
        self._unmappable_logged: set[int] = set()

    def learned(self, node_id: int, host: str, port: int) -> None:
        adv = format_host_port(host, port)
        dial = format_host_port(*self.addresses.dial_address(host, port))
        self.observer.node_discovered(node_id, dial, adv)
        log.info("node %d is at %s (dialled as %s)", node_id, adv, dial)

    def unmapped(self, node_id: int) -> None:
        if node_id not in self._unmappable_logged:
            self._unmappable_logged.add(node_id)
            log.error(
                "node %d has no kproxy port (max_node_id %d, no override): "
                "its endpoints are removed from responses",
                node_id,
                self.max_node_id,
            )


class ClusterDiscovery:
    """Fetches the cluster's brokers and opens a listener for each."""

    def __init__(
        self,
        addresses: AddressMap,
        listeners: ListenerSet,
        reports: NodeReports,
        max_frame_bytes: int,
        connect_timeout: float,
    ) -> None:
        self.addresses = addresses
        self.listeners = listeners
        self.reports = reports
        self.max_frame_bytes = max_frame_bytes
        self.connect_timeout = connect_timeout
        self.reached = False
        self.running = True
        self._lock: asyncio.Lock | None = None

    def mark_reached(self) -> None:
        if not self.reached:
            self.reached = True
            self.reports.observer.cluster_reached()

    def apply_brokers(self, brokers: list[Endpoint]) -> None:
        addresses = self.addresses
        for ep in brokers:
            node_id = ep.node_id
            if node_id is None:
                continue
            if not addresses.is_mappable(node_id):
                self.reports.unmapped(node_id)
                continue
            if addresses.learn(node_id, ep.host, ep.port, True):
                self.reports.learned(node_id, ep.host, ep.port)
            if addresses.needs_listener(node_id):
                self.listeners.open_nodes((node_id,))

    async def refresh(self) -> bool:
        """Ask the cluster for its brokers (Metadata v1, no topics) and open their listeners."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            for host, port in self.addresses.bootstrap_order():
                try:
                    brokers = await asyncio.wait_for(
                        fetch_brokers(host, port, self.max_frame_bytes), self.connect_timeout
                    )
                except (TimeoutError, OSError, ProtocolError) as exc:
                    log.warning(
                        "metadata from %s failed: %s", format_host_port(host, port), describe(exc)
                    )
                    self.reports.observer.upstream_connect_failed(
                        format_host_port(host, port), "metadata"
                    )
                    continue
                self.apply_brokers(brokers)
                self.mark_reached()
                return True
        return False

    async def run(self) -> None:
        delay = 1.0
        while self.running:
            ok = await self.refresh()
            delay = METADATA_REFRESH_SECONDS if ok else min(delay * 2, METADATA_REFRESH_SECONDS)
            await asyncio.sleep(delay)


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
                return walk(frame, body, METADATA, 1, False).endpoints
    finally:
        writer.close()
