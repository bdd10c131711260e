"""What a configuration reload may change while kproxy runs, and what waits for a restart.

Decided per key (`section.field`), in one table, `LIVE`: a key listed there takes
effect at once or for new connections (the text says which); any other key changed in
the file is reported as needing a restart and keeps its running value until then.
Nothing here touches a socket: `plan()` compares two validated settings, and the
runtime applies the plan's `effective` settings.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pydantic import BaseModel

from kproxy.config.settings import parse_config

if TYPE_CHECKING:
    from kproxy.config.settings import Settings

__all__ = ["LIVE", "ReloadPlan", "plan", "settings_hash"]

LIVE: Final[dict[str, str]] = {
    "cluster.bootstrap_servers": "the next discovery and new bootstrap connections",
    "cluster.dial_overrides": "new connections to brokers",
    "cluster.connect_timeout_seconds": "new connections to brokers",
    "cluster.tls": "new connections to brokers",
    "cluster.sasl": "the next discovery",
    "listeners.node_port_overrides": "nodes that have no listener yet",
    "listeners.max_node_id": "nodes that have no listener yet",
    "listeners.tls": "new client connections (certificate, client CA, minimum version); "
    "turning TLS on or off needs a restart",
    "listeners.api_policy": "at once, established connections included (their clients keep "
    "the ApiVersions answer they were given)",
    "listeners.authorization": "at once, established connections included (their next "
    "request is checked against the new rules)",
    "listeners.tenancy": "at once, established connections included (their next request "
    "is renamed for the tenant they match now; answers to requests already sent keep theirs)",
    "listeners.name": "at once (the refusals sent and logged)",
    "limits.max_frame_bytes": "new client connections",
    "limits.max_in_flight_requests": "new client connections",
    "limits.write_buffer_high_bytes": "new client connections",
    "limits.stream_responses_after_bytes": "new client connections",
    "limits.max_connections": "at once (new connections)",
    "limits.max_connections_per_client_ip": "at once (new connections)",
    "limits.idle_timeout_seconds": "at once",
    "limits.first_request_timeout_seconds": "at once",
    "limits.max_connection_age_seconds": "new client connections",
    "limits.connection_age_jitter": "new client connections",
    "limits.max_connection_creation_rate": "at once (new connections)",
    "quotas.entries": "at once, established connections included (every rate starts afresh)",
    "quotas.window_seconds": "at once (every rate starts afresh)",
    "quotas.samples": "at once (every rate starts afresh)",
    "principals.tls_mapping_rules": "new client connections",
    "principals.oauthbearer_claim": "new client connections",
    "clusters": "the clusters a switchover may move to (the active one's as cluster.* says)",
    "switchover.active": "a switchover to the cluster it names (the fence, then clients move)",
    "switchover.fence_seconds": "the next switchover",
    "switchover.failover": "at once",
    "log.level": "at once",
    "shutdown.grace_seconds": "at once",
}


@dataclass(frozen=True)
class ReloadPlan:
    """The keys a new file changes, split by when they can take effect."""

    applied: list[str]
    restart: list[str]
    effective: Settings  # the running settings once the plan is applied

    @property
    def result(self) -> str:
        if self.restart:
            return "restart_needed"
        return "applied" if self.applied else "unchanged"


def _changes(old: Settings, new: Settings) -> list[str]:
    keys = []
    for section in type(old).model_fields:
        before, after = getattr(old, section), getattr(new, section)
        if before == after:
            continue
        if not isinstance(before, BaseModel):  # clusters: one key for the whole mapping
            keys.append(section)
            continue
        for name in type(before).model_fields:
            if getattr(before, name) != getattr(after, name):
                keys.append(f"{section}.{name}")
    return keys


def _live(key: str, old: Settings, new: Settings) -> bool:
    if key == "listeners.tls":  # new files or options, not TLS on or off
        return old.listeners.tls is not None and new.listeners.tls is not None
    return key in LIVE


def plan(old: Settings, new: Settings) -> ReloadPlan:
    """Which of `new`'s changes apply now; `effective` keeps the running value of every
    key that needs a restart."""
    applied: list[str] = []
    restart: list[str] = []
    merged = old.model_dump()
    for key in _changes(old, new):
        if not _live(key, old, new):
            restart.append(key)
            continue
        applied.append(key)
        if "." not in key:
            merged[key] = new.model_dump()[key]
            continue
        section, name = key.split(".", 1)
        merged[section][name] = getattr(new, section).model_dump()[name]
    # Validated again: the mix of running and new values must hold together (ports), and
    # derived state (the dial override tables) is rebuilt from it.
    return ReloadPlan(applied, restart, parse_config(merged))


def settings_hash(settings: Settings) -> str:
    """A short fingerprint of the settings, secrets redacted (a changed secret alone does
    not change it): which configuration is running, for `kproxy_config_info`."""
    text = settings.model_dump_json()
    return hashlib.sha256(text.encode()).hexdigest()[:12]
