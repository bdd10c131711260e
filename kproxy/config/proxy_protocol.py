"""The `listeners.proxy_protocol` settings: a PROXY protocol header (HAProxy's, v1 or v2)
before each client connection's first byte, from the load balancers trusted to send one
(`kproxy.protocol.proxy_header`)."""

from __future__ import annotations

import functools
import ipaddress
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, Strict, WithJsonSchema
from pydantic_core import PydanticCustomError

from kproxy.config.section import Section

__all__ = ["ProxyProtocolSettings"]


def _network(value: str) -> str:
    try:
        return str(ipaddress.ip_network(value, strict=False))
    except ValueError:
        raise PydanticCustomError(
            "network", "{message}", {"message": "not an IP network (CIDR, e.g. 10.0.0.0/8)"}
        ) from None


Network = Annotated[
    str,
    Strict(),
    AfterValidator(_network),
    WithJsonSchema({"type": "string", "description": "an IP network in CIDR notation"}),
]


class ProxyProtocolSettings(Section):
    """Whether client connections begin with a PROXY header, and from where."""

    mode: Literal["off", "optional", "required"] = Field(
        "required",
        description="required: a connection without a header is closed; optional: one is "
        "read when it is there; off: none is read",
    )
    trusted_networks: tuple[Network, ...] = Field(
        ...,
        min_length=1,
        description="the addresses a header is taken from (the load balancers); a header "
        "from any other closes the connection",
    )

    def trusts(self, host: str) -> bool:
        """Whether a connection from `host` may carry a header."""
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in _parsed(self.trusted_networks))


@functools.cache
def _parsed(networks: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """The networks as `ipaddress` objects, parsed once per setting, not per connection."""
    return tuple(ipaddress.ip_network(n) for n in networks)
