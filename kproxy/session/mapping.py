"""What a session asks of the address mapping: a pure interface, no sockets.

The runtime's `kproxy.runtime.mapping.AddressMap` implements it. Ports are decided by
configuration (deterministic, so that replicas agree), except in the OS-chosen mode of
the demo and tests, where a node's port is known once its listener is bound: that is
why a session asks which nodes still need a listener and holds the response that named
them until the runtime has opened them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kproxy.protocol.found import Endpoint
from kproxy.session.records import NodeLearned


class AddressMapping(Protocol):
    def kproxy_address(self, node_id: int) -> tuple[str, int] | None:
        """The address clients must be told for node_id, once its listener is open;
        None when the node cannot be mapped (no port for it, or its listener failed)."""
        ...

    def needs_listener(self, node_id: int) -> bool:
        """True when node_id can be mapped but its listener is not open yet."""
        ...

    def is_mappable(self, node_id: int) -> bool:
        """False when configuration gives node_id no port (kproxy cannot serve it)."""
        ...

    def learn(self, node_id: int, host: str, port: int, authoritative: bool) -> bool:
        """Record where the cluster says node_id is; True if that is new or moved.

        Non-authoritative addresses (KRaft controller listeners) are recorded only for a
        node nothing else has named.
        """
        ...

    def cluster_address(self, host: str, port: int) -> tuple[str, int]:
        """For requests on their way to the cluster: a kproxy address becomes the
        node's own advertised address; anything else passes as it is."""
        ...


def told_address(mapping: AddressMapping, ep: Endpoint) -> tuple[str, int] | None:
    """What a client is told for an endpoint a response carries (None: it is removed)."""
    node_id = ep.node_id
    if node_id is None:
        return None
    if node_id < 0 and not ep.host:
        # No node and no address: an error answer (FindCoordinator with
        # GROUP_AUTHORIZATION_FAILED, a coordinator not ready yet) passes as it is,
        # so the client fails or retries exactly as it would directly.
        return ep.host, ep.port
    return mapping.kproxy_address(node_id)


def learn_endpoints(
    mapping: AddressMapping,
    endpoints: Iterable[Endpoint],
    authoritative: bool,
    learned: list[NodeLearned],
    needed: set[int],
) -> None:
    """Record where a response says its nodes are: the new or moved ones into `learned`,
    those that need a listener before the response may be sent into `needed`."""
    for ep in endpoints:
        node_id = ep.node_id
        if node_id is None or not mapping.is_mappable(node_id):
            continue
        if mapping.learn(node_id, ep.host, ep.port, authoritative):
            learned.append(NodeLearned(node_id, ep.host, ep.port))
        if mapping.needs_listener(node_id):
            needed.add(node_id)
