"""`cluster` (and each of `clusters`): an upstream Kafka cluster, and where kproxy dials
its brokers (`dial_overrides`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, PrivateAttr, model_validator

from kproxy.config.errors import key_segment
from kproxy.config.sasl import ClusterSaslSettings
from kproxy.config.section import Section
from kproxy.config.tls import ClusterTlsSettings
from kproxy.config.types import BrokerAddress, PositiveSeconds, fail
from kproxy.protocol.hostport import HostPort, is_valid_host, normalize_host, parse_host_port

__all__ = ["ClusterSettings"]


class ClusterSettings(Section):
    """The upstream Kafka cluster."""

    bootstrap_servers: Annotated[tuple[BrokerAddress, ...], Field(min_length=1)]
    dial_overrides: dict[str, str] = Field(
        default_factory=dict,
        description="advertised host:port -> dial host:port, or advertised host -> dial host "
        "(same port)",
    )
    connect_timeout_seconds: PositiveSeconds = 10.0
    tls: ClusterTlsSettings | None = Field(
        None, description="TLS to the brokers (absent: plaintext)"
    )
    sasl: ClusterSaslSettings | None = Field(
        None,
        description="kproxy's own authentication (discovery) on a SASL listener; clients "
        "authenticate for themselves through kproxy either way",
    )
    _exact: dict[HostPort, HostPort] = PrivateAttr(default_factory=dict)
    _by_host: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _parse_overrides(self) -> ClusterSettings:
        seen: dict[object, str] = {}
        for key, value in self.dial_overrides.items():
            at = f"dial_overrides.{key_segment(key)}"
            try:
                host, port = parse_host_port(key)
            except ValueError:
                # A bare host maps a name to another host, keeping each broker's port:
                # the cluster's DNS names, resolved for kproxy alone.
                if ":" in key or not is_valid_host(key):
                    raise fail(at, "key must be host:port or host") from None
                if ":" in value or not is_valid_host(value):
                    raise fail(at, "must be a host (the key has no port)") from None
                name = normalize_host(key)
                if name in seen:
                    raise fail(at, f"same broker host as {seen[name]!r}") from None
                seen[name] = key
                self._by_host[name] = value
                continue
            normalized = (normalize_host(host), port)
            if normalized in seen:
                raise fail(at, f"same broker address as {seen[normalized]!r}")
            seen[normalized] = key
            try:
                self._exact[normalized] = parse_host_port(value)
            except ValueError:
                raise fail(at, "must be host:port") from None
        return self

    def dial_address(self, host: str, port: int) -> HostPort:
        """The address to connect to for a broker advertised as ``host:port``."""
        name = normalize_host(host)
        exact = self._exact.get((name, port))
        if exact is not None:
            return exact
        return self._by_host.get(name, host), port
