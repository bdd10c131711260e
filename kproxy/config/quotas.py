"""The `quotas` settings: how fast a client may produce, fetch and send requests through
kproxy, enforced as a broker enforces its own quotas (KIP-13, KIP-219): the response
carries `throttle_time_ms` and kproxy stops reading the client for that time."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, Strict, model_validator

from kproxy.config.proxy_protocol import Network
from kproxy.config.section import Section

__all__ = ["QuotaEntry", "QuotaSettings"]

Rate = Annotated[float, Strict(), Field(gt=0)]


class QuotaEntry(Section):
    """One quota: the clients it matches (none named: every client, the default) and the
    rates they may use. The most specific entry that matches a client is the one in
    force, as with Kafka's quota entities: a client id and an address together, then a
    client id, then an address (the longest network first), then the default."""

    name: Annotated[str, Strict(), Field(min_length=1, max_length=64)] | None = Field(
        None,
        description="the label of its metrics (default: what it matches, e.g. "
        "client_id=batch-loader)",
    )
    client_id: Annotated[str, Strict()] | None = Field(
        None, description="the client id it applies to (every connection naming it shares it)"
    )
    client_address: Network | None = Field(
        None,
        description="the client addresses it applies to (a network in CIDR notation; each "
        "address has its own rate; behind a load balancer, the PROXY protocol's address)",
    )
    produce_bytes_per_second: Rate | None = Field(
        None, description="bytes of Produce requests per second"
    )
    fetch_bytes_per_second: Rate | None = Field(
        None, description="bytes of Fetch responses per second"
    )
    requests_per_second: Rate | None = Field(None, description="requests of any kind per second")

    @model_validator(mode="after")
    def _a_rate(self) -> QuotaEntry:
        if (
            self.produce_bytes_per_second is None
            and self.fetch_bytes_per_second is None
            and self.requests_per_second is None
        ):
            raise ValueError(
                "a quota needs at least one of produce_bytes_per_second, "
                "fetch_bytes_per_second, requests_per_second"
            )
        return self

    @property
    def label(self) -> str:
        if self.name is not None:
            return self.name
        parts = [f"client_id={self.client_id}"] if self.client_id is not None else []
        if self.client_address is not None:
            parts.append(f"client_address={self.client_address}")
        return ",".join(parts) or "default"


class QuotaSettings(Section):
    """Quotas on what clients send and fetch through kproxy (none: no quota)."""

    entries: tuple[QuotaEntry, ...] = Field(
        (), description="the quotas, each matching clients by client id and/or address"
    )
    window_seconds: Annotated[float, Strict(), Field(gt=0, le=60)] = Field(
        1.0, description="the length of one sample of a rate (Kafka's quota.window.size.seconds)"
    )
    samples: Annotated[int, Strict(), Field(ge=2, le=100)] = Field(
        11, description="samples a rate is measured over (Kafka's quota.window.num)"
    )

    @model_validator(mode="after")
    def _distinct(self) -> QuotaSettings:
        seen: dict[tuple[str | None, str | None], int] = {}
        labels: set[str] = set()
        for i, entry in enumerate(self.entries):
            key = (entry.client_id, entry.client_address)
            if key in seen:
                raise ValueError(f"entries[{i}] matches the same clients as entries[{seen[key]}]")
            seen[key] = i
            if entry.label in labels:
                raise ValueError(f"entries[{i}]: another entry is named {entry.label!r}")
            labels.add(entry.label)
        return self
