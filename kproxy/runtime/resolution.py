"""Whether kproxy can dial the brokers it learned: each advertised address, after
`cluster.dial_overrides`, resolved once per discovery.

Brokers often advertise names only resolvable inside their own network. Without a dial
override for them, every client connection kproxy opens to such a node fails at once,
and the only sign used to be a per-connection `gaierror`. Discovery says it once,
naming the nodes and the setting that maps them, and `/readyz` fails while no node can
be dialled at all.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket

from kproxy.protocol.hostport import format_host_port
from kproxy.runtime.describe import describe
from kproxy.runtime.mapping import AddressMap

log = logging.getLogger("kproxy.discovery")

DIAL_OVERRIDES_HINT = (
    "map each to an address this host can dial with cluster.dial_overrides "
    '(e.g. cluster.dial_overrides: {"broker-1.kafka:9092": "10.0.0.5:9092"})'
)


class NodeResolution:
    """The learned nodes whose dial address does not resolve here, as of the last check."""

    def __init__(self, addresses: AddressMap) -> None:
        self.addresses = addresses
        self.unresolved: dict[int, str] = {}  # node id -> its advertised host:port
        self._said: set[tuple[int, str]] = set()  # (node id, address) already logged

    async def check(self) -> None:
        """Resolve every learned node's dial address; log the ones that do not resolve,
        once each, with the setting that fixes them."""
        loop = asyncio.get_running_loop()
        unresolved: dict[int, str] = {}
        reasons: list[str] = []
        for node_id, (host, port) in sorted(self.addresses.advertised.items()):
            dial_host, dial_port = self.addresses.dial_address(host, port)
            if _is_ip(dial_host):
                continue
            try:
                await loop.getaddrinfo(dial_host, dial_port, type=socket.SOCK_STREAM)
            except OSError as exc:  # socket.gaierror, mostly
                advertised = format_host_port(host, port)
                unresolved[node_id] = advertised
                if (node_id, advertised) not in self._said:
                    self._said.add((node_id, advertised))
                    dialled = format_host_port(dial_host, dial_port)
                    how = "" if dialled == advertised else f", dialled as {dialled}"
                    reasons.append(f"node {node_id} at {advertised}{how} ({describe(exc)})")
        self.unresolved = unresolved
        if reasons:
            log.warning(
                "brokers advertise addresses this host cannot resolve, so clients cannot "
                "reach them through kproxy: %s; %s",
                "; ".join(reasons),
                DIAL_OVERRIDES_HINT,
            )

    def none_dialable(self) -> str | None:
        """Why no learned node can be dialled, or None when one can (or none is known)."""
        advertised = self.addresses.advertised
        if not advertised or set(advertised) - set(self.unresolved):
            return None
        names = ", ".join(self.unresolved[n] for n in sorted(self.unresolved))
        return f"no broker's address resolves on this host ({names}): set cluster.dial_overrides"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
