"""What every connection of one kproxy process shares, and the registry of them all."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from kproxy.proxy.discovery import ClusterDiscovery, NodeReports
from kproxy.proxy.listeners import ListenerSet
from kproxy.proxy.mapping import AddressMap
from kproxy.proxy.observer import ProxyObserver
from kproxy.session import SessionLimits, UpstreamStep


class Connection(Protocol):
    listener: str

    @property
    def has_in_flight(self) -> bool: ...

    def close(self, cause: str) -> None: ...


class ConnectionRegistry:
    """The live client connections; refuses new ones once shutdown began."""

    def __init__(self, observer: ProxyObserver) -> None:
        self.observer = observer
        self.connections: set[Connection] = set()
        self.accepting = True

    def opened(self, conn: Connection) -> bool:
        if not self.accepting:
            conn.close("shutting_down")
            return False
        self.connections.add(conn)
        self.observer.connection_opened(conn.listener)
        return True

    def closed(self, conn: Connection, cause: str) -> None:
        if conn in self.connections:
            self.connections.discard(conn)
            self.observer.connection_closed(conn.listener, cause)

    def any_in_flight(self) -> bool:
        return any(c.has_in_flight for c in self.connections)

    def close_all(self, cause: str) -> None:
        for conn in list(self.connections):
            conn.close(cause)


class ConnectionServices:
    """The shared parts a connection uses: mapping, listeners, observer, limits."""

    def __init__(
        self,
        addresses: AddressMap,
        listeners: ListenerSet,
        discovery: ClusterDiscovery,
        reports: NodeReports,
        registry: ConnectionRegistry,
        observer: ProxyObserver,
        limits: SessionLimits,
        write_buffer_high: int,
        connect_timeout: float,
    ) -> None:
        self.addresses = addresses
        self.listeners = listeners
        self.discovery = discovery
        self.reports = reports
        self.registry = registry
        self.observer = observer
        self.limits = limits
        self.write_buffer_high = write_buffer_high
        self.connect_timeout = connect_timeout
        self.refresh_metadata: Callable[[], Awaitable[bool]] = discovery.refresh

    def observe_responses(self, step: UpstreamStep, node_id: int | None, done: float) -> None:
        """Hand what a step forwarded to the observer: after the write, never before."""
        self.discovery.mark_reached()
        obs = self.observer
        for seen in step.responses:
            key = seen.api_key
            obs.frame(key, "response", seen.size)
            obs.response(
                key, seen.version, seen.client_id, done - seen.received, seen.upstream_seconds
            )
            if seen.leaders:
                obs.leaders(key, seen.client_id, node_id, seen.leaders, seen.endpoint_nodes)
            if seen.rewritten or seen.removed:
                obs.endpoints(key, seen.rewritten, seen.removed)
        for dropped, lowered in step.clamped:
            obs.api_versions_clamped(dropped, lowered)
        for unmapped in step.unmapped:
            self.reports.unmapped(unmapped)
