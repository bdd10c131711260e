"""Where each broker is: advertised upstream addresses, dial overrides, kproxy ports."""

from __future__ import annotations

from collections.abc import Mapping


def split_host_port(text: str) -> tuple[str, int]:
    """'host:port' or '[v6]:port' -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ValueError(f"{text!r} is not host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class AddressBook:
    """Node id -> the address the cluster advertises for it, and where kproxy dials it.

    Brokers often advertise names only resolvable inside their own network; the
    operator's `dial_overrides` say which address kproxy dials instead, while clients
    only ever see kproxy's own addresses.
    """

    def __init__(self, bootstrap: list[str], dial_overrides: Mapping[str, str]) -> None:
        self.bootstrap = [split_host_port(b) for b in bootstrap]
        self._overrides = {k.lower(): split_host_port(v) for k, v in dial_overrides.items()}
        self.advertised: dict[int, tuple[str, int]] = {}
        self._next_bootstrap = 0

    def learn(self, node_id: int, host: str, port: int) -> bool:
        """Record what the cluster says node_id's address is; True if it is new or moved."""
        old = self.advertised.get(node_id)
        if old == (host, port):
            return False
        self.advertised[node_id] = (host, port)
        return True

    def dial_address(self, host: str, port: int) -> tuple[str, int]:
        return self._overrides.get(join_host_port(host, port).lower(), (host, port))

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
