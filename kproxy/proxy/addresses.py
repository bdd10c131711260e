"""Where each broker is: advertised upstream addresses, dial overrides, kproxy ports."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kproxy.config import ClusterSettings


def join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class AddressBook:
    """Node id -> the address the cluster advertises for it, and where kproxy dials it.

    Brokers often advertise names only resolvable inside their own network; the
    operator's `dial_overrides` say which address kproxy dials instead, while clients
    only ever see kproxy's own addresses.
    """

    def __init__(self, cluster: ClusterSettings) -> None:
        self.bootstrap = list(cluster.bootstrap_servers)
        self.dial_address = cluster.dial_address
        self.advertised: dict[int, tuple[str, int]] = {}
        self._next_bootstrap = 0

    def learn(self, node_id: int, host: str, port: int) -> bool:
        """Record what the cluster says node_id's address is; True if it is new or moved."""
        old = self.advertised.get(node_id)
        if old == (host, port):
            return False
        self.advertised[node_id] = (host, port)
        return True

    def node_dial_address(self, node_id: int) -> tuple[str, int] | None:
        adv = self.advertised.get(node_id)
        return None if adv is None else self.dial_address(*adv)

    def bootstrap_order(self) -> list[tuple[str, int]]:
        """Bootstrap servers, rotated so that connections spread across them."""
        n = len(self.bootstrap)
        start = self._next_bootstrap % n
        self._next_bootstrap += 1
        order = self.bootstrap[start:] + self.bootstrap[:start]
        return [self.dial_address(h, p) for h, p in order]
