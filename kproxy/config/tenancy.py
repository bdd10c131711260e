"""The `listeners.tenancy` settings: teams sharing one Kafka cluster through one
listener, each seeing only its own topics, groups and transactional ids, under the names
it uses (`kproxy.session.tenancy` enforces it).

A connection belongs to the first tenant that matches its principal, the server name it
sent (SNI), its address and the listener's name; what a tenant names is prefixed on the
way to the cluster and unprefixed on the way back. No tenant's prefix may start another's:
`team-a.` and `team-a.x.` would let the first reach the second's names.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, Strict, model_validator

from kproxy.config.authorization import NamePattern
from kproxy.config.proxy_protocol import Network
from kproxy.config.section import Section
from kproxy.config.types import fail

__all__ = ["TenancySettings", "TenantSettings"]

# The characters of a Kafka topic name (Topic.LEGAL_CHARS): a prefix is part of one.
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
# Kafka's longest topic name is 249 characters: a prefix leaves room for a name.
MAX_PREFIX = 200
TenantName = Annotated[
    str, Strict(), Field(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9._-]+$")
]


class TenantSettings(Section):
    """One tenant: how its connections are known, and the prefix of its names."""

    name: TenantName = Field(..., description="the tenant's name, in metrics, events and logs")
    prefix: Annotated[str, Strict(), Field(min_length=1, max_length=MAX_PREFIX)] | None = Field(
        None,
        description="put before every topic, group and transactional id the tenant names "
        "(default: the name and a dot)",
    )
    principals: tuple[NamePattern, ...] | None = Field(
        None, description="its principals (User:alice) or patterns (absent: any)"
    )
    server_names: tuple[NamePattern, ...] | None = Field(
        None, description="the TLS server names (SNI) its clients send, or patterns (absent: any)"
    )
    addresses: tuple[Network, ...] | None = Field(
        None, description="its client addresses, as networks in CIDR notation (absent: any)"
    )
    listeners: tuple[Annotated[str, Strict()], ...] | None = Field(
        None, description="the listener names it is served on (absent: any)"
    )

    @model_validator(mode="after")
    def _legal_prefix(self) -> TenantSettings:
        if _LEGAL.fullmatch(self.names_prefix) is None:
            raise fail(
                "prefix",
                f"{self.names_prefix!r} has a character Kafka topic names may not hold "
                "(letters, digits, '.', '_' and '-' only)",
            )
        return self

    @property
    def names_prefix(self) -> str:
        return f"{self.name}." if self.prefix is None else self.prefix


class TenancySettings(Section):
    """The tenants of one listener, in order: the first that matches decides."""

    tenants: tuple[TenantSettings, ...] = Field(
        ..., min_length=1, description="matched in order: the first match decides"
    )
    unassigned: Literal["deny", "cluster"] = Field(
        "deny",
        description="a connection no tenant matches: denied every topic, group and "
        "transactional id (deny), or sees the cluster as it is (cluster: operators)",
    )

    @model_validator(mode="after")
    def _apart(self) -> TenancySettings:
        names: set[str] = set()
        for i, tenant in enumerate(self.tenants):
            if tenant.name in names:
                raise fail(f"tenants.{i}.name", f"{tenant.name!r} names another tenant too")
            names.add(tenant.name)
            for j, other in enumerate(self.tenants[:i]):
                a, b = tenant.names_prefix, other.names_prefix
                if a.startswith(b) or b.startswith(a):
                    raise fail(
                        f"tenants.{i}.prefix",
                        f"{a!r} and tenants.{j}'s {b!r}: one starts the other, so one "
                        "tenant could reach the other's names",
                    )
        return self
