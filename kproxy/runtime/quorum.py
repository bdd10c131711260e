"""The controllers of a KRaft quorum carried through kproxy: where each is, and its port.

Pure state, no sockets. Sessions on a controller port use it as their
`kproxy.session.AddressMapping`, and sessions on client ports use it for the responses
that name controller listeners (DescribeQuorum, Vote...: `QUORUM_RESPONSES`).

Each controller advertises kproxy's port for itself (docs/kraft-quorum.md), so:

* a controller endpoint a response carries is told to clients as that controller's
  kproxy port, by id; a controller not in `quorum.controllers` is removed (fail closed);
* nothing is ever learned from the cluster: the configuration alone says where a
  controller is dialled;
* requests reach the controllers exactly as sent (`cluster_address` is the identity):
  a controller compares the endpoints stored for it with its own advertised listeners
  (`VoterSet.voterNodeNeedsUpdate`) and sends UpdateRaftVoter whenever they differ, so
  any rewrite of AddRaftVoter/UpdateRaftVoter/ControllerRegistration listeners would
  start an endless update loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kproxy.protocol.hostport import HostPort
from kproxy.runtime.mapping import DialTarget

if TYPE_CHECKING:
    from kproxy.config.quorum import QuorumSettings

CONTROLLER_LISTENER_PREFIX = "controller-"


def controller_listener_name(node_id: int) -> str:
    return f"{CONTROLLER_LISTENER_PREFIX}{node_id}"


def is_controller_listener(name: str) -> bool:
    return name.startswith(CONTROLLER_LISTENER_PREFIX)


class QuorumMap:
    """Controller id -> its real address and kproxy port (`quorum.controllers`)."""

    def __init__(
        self,
        quorum: QuorumSettings,
        advertised_host: str,
        dial_address: Callable[[str, int], HostPort],
    ) -> None:
        self.controllers = dict(quorum.controllers)
        self.advertised_host = advertised_host
        self.dial_address = dial_address
        self.listener_ports: dict[int, int] = {}

    def configure(self, dial_address: Callable[[str, int], HostPort]) -> None:
        """A reload's dial overrides, for new connections to controllers."""
        self.dial_address = dial_address

    # -- kproxy.session.AddressMapping -------------------------------------------------------
    def kproxy_address(self, node_id: int) -> HostPort | None:
        port = self.listener_ports.get(node_id)
        return None if port is None else (self.advertised_host, port)

    def needs_listener(self, node_id: int) -> bool:
        return False  # every controller's listener is opened at start

    def is_mappable(self, node_id: int) -> bool:
        return node_id in self.controllers

    def learn(self, node_id: int, host: str, port: int, authoritative: bool) -> bool:
        return False  # where a controller is comes from the configuration alone

    def cluster_address(self, host: str, port: int) -> HostPort:
        return host, port

    # -- the runtime's side ------------------------------------------------------------------
    def listener_bound(self, node_id: int, port: int) -> None:
        self.listener_ports[node_id] = port

    def real_address(self, node_id: int) -> HostPort | None:
        controller = self.controllers.get(node_id)
        return None if controller is None else controller.address

    def dial_target(self, node_id: int) -> DialTarget | None:
        real = self.real_address(node_id)
        return None if real is None else DialTarget(*self.dial_address(*real), real[0])
