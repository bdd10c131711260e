"""`switchover`: which of the named `clusters` kproxy serves, and how it moves to another.

A configuration names its upstream either as one `cluster` or as several `clusters`
(each with its own bootstrap servers, dial overrides, TLS and SASL) of which
`switchover.active` is served. Clients keep kproxy's addresses whichever cluster is
behind them: node N of any cluster is served on node N's port (or SNI name), so a
switchover changes where kproxy dials, never what clients were told.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, Strict
from pydantic_core import PydanticCustomError

from kproxy.config.section import Section
from kproxy.config.types import Bool, PositiveSeconds, fail

__all__ = ["CLUSTER_NAME_PATTERN", "ClusterName", "FailoverSettings", "SwitchoverSettings"]

CLUSTER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"


def _cluster_name(value: str) -> str:
    if not re.fullmatch(CLUSTER_NAME_PATTERN, value):
        raise PydanticCustomError(
            "cluster_name", "a cluster's name is 1-63 letters, digits, '.', '_' or '-'"
        )
    return value


#: A cluster's name: in metrics labels, event fields and the admin endpoint's query.
ClusterName = Annotated[
    str, Strict(), AfterValidator(_cluster_name), Field(pattern=CLUSTER_NAME_PATTERN)
]


class FailoverSettings(Section):
    """An automatic switchover when the active cluster stops answering."""

    enabled: Bool = Field(False, description="switch without an operator (off by default)")
    after_seconds: PositiveSeconds = Field(
        30.0,
        description="the active cluster unreachable this long, and a standby reachable: switch",
    )
    min_interval_seconds: PositiveSeconds = Field(
        300.0,
        description="no automatic switch sooner than this after any switch (no flapping)",
    )


class SwitchoverSettings(Section):
    active: ClusterName | None = Field(
        None,
        description="the cluster of `clusters` served at start (default: the first); "
        "changed by a reload, a switchover to it",
    )
    fence_seconds: PositiveSeconds = Field(
        10.0,
        description="how long requests already forwarded may take to be answered before "
        "their connections are closed anyway",
    )
    failover: FailoverSettings = Field(default_factory=FailoverSettings)


def active_cluster(data: dict[str, Any]) -> dict[str, Any]:
    """The raw settings with `cluster` set to the active one of `clusters` (when the file
    names several): what every part that serves one cluster reads."""
    clusters = data.get("clusters")
    if not clusters:
        return data
    if not isinstance(clusters, dict):
        return data  # the model's own error names it
    switchover = data.get("switchover")
    active = switchover.get("active") if isinstance(switchover, dict) else None
    if active is None:
        active = next(iter(clusters))
    elif active not in clusters:
        raise fail("switchover.active", f"names no cluster of clusters ({', '.join(clusters)})")
    chosen = clusters[active]
    if data.get("cluster") not in (None, chosen):
        raise fail("cluster", "give one cluster or several clusters, not both")
    return {**data, "cluster": chosen}
