"""Port collisions across configuration sections: the bootstrap port, node ports (by
`broker_port_base` or an override), controller ports (`quorum`) and the admin port.
Port 0 (OS-chosen) never collides."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from kproxy.config.types import fail


class NodePorts(NamedTuple):
    """The `listeners` keys that decide node ports."""

    bootstrap_port: int
    broker_port_base: int
    max_node_id: int
    node_port_overrides: Mapping[int, int]


def check_ports(lst: NodePorts, admin_port: int, controller_ports: Mapping[int, int]) -> None:
    """Raise the first collision, at the path of the port that collides
    (`controller_ports`: controller id -> its port)."""
    bootstrap, base, overrides = (
        lst.bootstrap_port,
        lst.broker_port_base,
        lst.node_port_overrides,
    )

    def derived_node(port: int) -> int | None:
        """The node whose ``broker_port_base + id`` port this is, if in use."""
        node_id = port - base
        if base and 0 <= node_id <= lst.max_node_id and node_id not in overrides:
            return node_id
        return None

    if admin_port and admin_port == bootstrap:
        raise fail("admin.port", "collides with listeners.bootstrap_port")
    node_id = derived_node(admin_port) if admin_port else None
    if node_id is not None:
        raise fail(
            "admin.port",
            f"port {admin_port} is the port of node {node_id} (listeners.broker_port_base "
            f"{base} + {node_id}): move admin.port, or lower listeners.max_node_id below "
            f"{node_id}",
        )
    node_id = derived_node(bootstrap) if bootstrap else None
    if node_id is not None:
        raise fail(
            "listeners.bootstrap_port",
            f"collides with the port of node {node_id} (broker_port_base + {node_id})",
        )
    used_by: dict[int, str] = {}

    def check_fixed(at: str, port: int, who: str, node_id: int | None) -> None:
        """A port given outright (a node override, a controller's port)."""
        other = derived_node(port)
        if port == bootstrap:
            raise fail(at, f"port {port} collides with listeners.bootstrap_port")
        if port == admin_port:
            raise fail(at, f"port {port} collides with admin.port")
        if port in used_by:
            raise fail(at, f"port {port} is also used by {used_by[port]}")
        if other is not None and other != node_id:
            raise fail(
                at,
                f"port {port} collides with the port of node {other} (broker_port_base + {other})",
            )
        used_by[port] = who

    for node_id, port in overrides.items():
        at = f"listeners.node_port_overrides.{node_id}"
        check_fixed(at, port, f"node {node_id}", node_id)
    for node_id, port in controller_ports.items():
        at = f"quorum.controllers.{node_id}.port"
        check_fixed(at, port, f"controller {node_id}", None)
