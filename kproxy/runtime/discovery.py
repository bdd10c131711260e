"""Cluster discovery: kproxy's own Metadata requests, and what it learns of nodes.

kproxy asks the cluster for its brokers at start and every 30 s, so that every node
has a listener before any client is told about it, and so that `/readyz` can say the
cluster was reached. Nodes are also learned from the responses relayed to clients
(`kproxy.session`): both report through `NodeReports`.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TYPE_CHECKING

from kproxy.protocol.hostport import format_host_port
from kproxy.protocol.walker import Endpoint
from kproxy.runtime.listeners import ListenerSet
from kproxy.runtime.mapping import AddressMap
from kproxy.runtime.observer import ProxyObserver
from kproxy.runtime.own_connection import (
    UNANSWERED,
    MetadataRefused,
    fetch_brokers,
    why_unanswered,
)
from kproxy.runtime.resolution import NodeResolution
from kproxy.runtime.sasl import SaslFailed
from kproxy.runtime.tls import failure_reason as tls_failure_reason

if TYPE_CHECKING:
    from kproxy.config.sasl import ClusterSaslSettings

log = logging.getLogger("kproxy.discovery")

METADATA_REFRESH_SECONDS = 30.0


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
        tls: ssl.SSLContext | None = None,
        sasl: ClusterSaslSettings | None = None,
    ) -> None:
        self.addresses = addresses
        self.tls = tls
        self.sasl = sasl
        self._refusal_logged = False
        self.listeners = listeners
        self.reports = reports
        self.max_frame_bytes = max_frame_bytes
        self.connect_timeout = connect_timeout
        self.reached = False
        self.running = True
        self.resolution = NodeResolution(addresses)
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
            for target in self.addresses.bootstrap_order():
                address = format_host_port(target.host, target.port)
                try:
                    brokers = await asyncio.wait_for(
                        fetch_brokers(
                            target, self.max_frame_bytes, self.tls, self.sasl, self.mark_reached
                        ),
                        self.connect_timeout,
                    )
                except MetadataRefused:
                    self._refused(address)
                    return True  # reached; nodes come from the answers clients get
                except UNANSWERED as exc:
                    self._failed(address, exc)
                    continue
                self.apply_brokers(brokers)
                self.mark_reached()
                await self.resolution.check()
                return True
        return False

    def _failed(self, address: str, exc: BaseException) -> None:
        observer = self.reports.observer
        if isinstance(exc, ssl.SSLError):
            observer.tls_handshake_failed("upstream", tls_failure_reason(exc))
        log.warning("metadata from %s failed: %s", address, why_unanswered(exc))
        observer.upstream_connect_failed(
            address, "sasl" if isinstance(exc, SaslFailed) else "metadata"
        )

    def _refused(self, address: str) -> None:
        if not self._refusal_logged:
            self._refusal_logged = True
            log.warning(
                "%s answers ApiVersions but closed kproxy's Metadata request: a SASL "
                "listener, and no cluster.sasl? kproxy serves clients anyway and learns the "
                "brokers from the answers it relays to them (set cluster.sasl to list them "
                "before any client asks)",
                address,
            )

    async def run(self) -> None:
        delay = 1.0
        while self.running:
            ok = await self.refresh()
            delay = METADATA_REFRESH_SECONDS if ok else min(delay * 2, METADATA_REFRESH_SECONDS)
            await asyncio.sleep(delay)
