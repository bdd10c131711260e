"""Where each node is: its advertised and dialled address, and its kproxy address.

Pure state, no sockets: the listeners record the ports they bound, sessions ask it
(through `kproxy.session.AddressMapping`) what clients must be told, and the
connections ask it where to dial. Brokers often advertise names only resolvable inside
their own network; the operator's `dial_overrides` say which address kproxy dials
instead, while clients only ever see kproxy's own addresses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from kproxy.protocol.hostport import HostPort

if TYPE_CHECKING:
    from kproxy.config.settings import ClusterSettings, ListenerSettings


_MAX_NODE_ID = 2**31 - 1  # node ids are int32


def _name_matcher(pattern: str) -> Callable[[str], int | None]:
    """The node id in a name made by `pattern` (`broker-{node_id}.example.com`)."""
    head, tail = pattern.lower().split("{node_id}")
    regex = re.compile(re.escape(head) + r"(0|[1-9][0-9]{0,9})" + re.escape(tail))

    def node_id(name: str) -> int | None:
        found = regex.fullmatch(name)
        value = int(found.group(1)) if found is not None else None
        return value if value is not None and value <= _MAX_NODE_ID else None

    return node_id


class DialTarget(NamedTuple):
    """Where kproxy connects for a broker, and the name the broker goes by: TLS sends it
    (SNI) and checks the certificate against it, whatever address is dialled."""

    host: str
    port: int
    name: str


def cluster_target(cluster: ClusterSettings, host: str, port: int) -> DialTarget:
    """Where kproxy dials `cluster`'s broker advertised as host:port (its dial overrides)."""
    return DialTarget(*cluster.dial_address(host, port), host)


class AddressMap:
    """Node id -> advertised address, dial address and kproxy listener port."""

    def __init__(self, cluster: ClusterSettings, listeners: ListenerSettings) -> None:
        self.configure(cluster, listeners)
        self.advertised_host = listeners.advertised_host
        # SNI: every node on the bootstrap port, told apart by the name clients send.
        self.sni = listeners.sni
        self.sni_port: int | None = None
        self._sni_node = _name_matcher(listeners.sni.node_host_pattern) if listeners.sni else None
        self.advertised: dict[int, HostPort] = {}  # what the cluster says each node is
        self.listener_ports: dict[int, int] = {}  # node id -> port its listener got
        self.failed_listeners: set[int] = set()
        self._node_at_port: dict[int, int] = {}
        self._next_bootstrap = 0

    def configure(self, cluster: ClusterSettings, listeners: ListenerSettings) -> None:
        """At start, and on a reload: bootstrap servers, dial overrides and node ports
        (for nodes that have no listener yet) as the settings say."""
        self.bootstrap: list[HostPort] = list(cluster.bootstrap_servers)
        self.dial_address = cluster.dial_address
        self._port_for_node = listeners.port_for_node

    def serve_cluster(self, cluster: ClusterSettings) -> None:
        """A switchover: another cluster's bootstrap servers and dial addresses, and none
        of the old one's nodes (each is learned again from the new cluster). Node N keeps
        its kproxy port whichever cluster it belongs to: clients' addresses do not move."""
        self.bootstrap = list(cluster.bootstrap_servers)
        self.dial_address = cluster.dial_address
        self.advertised.clear()
        self._next_bootstrap = 0

    # -- kproxy's side ---------------------------------------------------------------------
    def port_for_node(self, node_id: int) -> int | None:
        """The configured port (0: OS-chosen), or None when node_id cannot be mapped."""
        port: int | None = self._port_for_node(node_id)
        return port

    def is_mappable(self, node_id: int) -> bool:
        if self.sni is not None:
            return node_id >= 0
        return self._port_for_node(node_id) is not None

    def needs_listener(self, node_id: int) -> bool:
        return (
            self.sni is None
            and node_id not in self.listener_ports
            and node_id not in self.failed_listeners
            and self._port_for_node(node_id) is not None
        )

    def kproxy_address(self, node_id: int) -> HostPort | None:
        if self.sni is not None:
            if self.sni_port is None or node_id < 0:
                return None
            return self.sni.node_host(node_id), self.sni_port
        port = self.listener_ports.get(node_id)
        return None if port is None else (self.advertised_host, port)

    def bootstrap_bound(self, port: int) -> None:
        self.sni_port = port

    def sni_target(self, server_name: str | None) -> tuple[bool, int | None]:
        """(known, node id) of the name a client sent: the bootstrap name is (True, None),
        a node's name (True, N), any other name or none (False, None)."""
        if self.sni is None or server_name is None or self._sni_node is None:
            return False, None
        name = server_name.lower().rstrip(".")
        if name == self.sni.bootstrap_host.lower():
            return True, None
        node_id = self._sni_node(name)
        return node_id is not None, node_id

    def listener_bound(self, node_id: int, port: int) -> None:
        self.listener_ports[node_id] = port
        self._node_at_port[port] = node_id

    def listener_failed(self, node_id: int) -> None:
        self.failed_listeners.add(node_id)

    # -- the cluster's side ------------------------------------------------------------------
    def learn(self, node_id: int, host: str, port: int, authoritative: bool) -> bool:
        """Record where the cluster says node_id is; True if that is new or moved."""
        old = self.advertised.get(node_id)
        if old == (host, port) or (old is not None and not authoritative):
            return False
        self.advertised[node_id] = (host, port)
        return True

    def node_dial_target(self, node_id: int) -> DialTarget | None:
        adv = self.advertised.get(node_id)
        return None if adv is None else DialTarget(*self.dial_address(*adv), adv[0])

    def cluster_address(self, host: str, port: int) -> HostPort:
        """Requests travel to the cluster: kproxy's own addresses become the real ones."""
        if self.sni is not None:
            known, node_id = self.sni_target(host)
            adv = self.advertised.get(node_id) if known and node_id is not None else None
            return adv if adv is not None and port == self.sni_port else (host, port)
        if host == self.advertised_host:
            node_id = self._node_at_port.get(port)
            if node_id is not None:
                adv = self.advertised.get(node_id)
                if adv is not None:
                    return adv
        return host, port

    def bootstrap_order(self) -> list[DialTarget]:
        """Bootstrap servers, rotated so that connections spread across them."""
        n = len(self.bootstrap)
        start = self._next_bootstrap % n
        self._next_bootstrap += 1
        order = self.bootstrap[start:] + self.bootstrap[:start]
        return [DialTarget(*self.dial_address(h, p), h) for h, p in order]
