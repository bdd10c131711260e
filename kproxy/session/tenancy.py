"""Tenants of one listener (sans-IO): teams sharing a Kafka cluster, each seeing only its
own topics, groups and transactional ids, under the names it uses.

A connection belongs to the first tenant that matches it (`Tenancy.assign`). What its
requests name is prefixed on the way to the cluster (`to_cluster`), every field the
schemas annotate and those `kproxy.protocol.renaming` knows besides; what responses
name is unprefixed on the way back (`ResponseEdit.tenant`), and what is not the
tenant's is left out. Isolation is then the listener's authorization at work
(`TenantScope`): a tenant may touch only names under its prefix, so a topic id of
another tenant's topic (KIP-516) is refused as a broker's ACLs refuse it, and the
answers that list topics, groups and transactional ids leave out the others'. APIs that
act on the cluster as a whole (ACLs, quotas, log dirs, reassignments, streams groups)
are refused to tenants. Record batches are never touched.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from kproxy.protocol.apis import api_name, is_flexible
from kproxy.protocol.entities import CONFIG_KINDS, TOPIC
from kproxy.protocol.headers import RequestHeader
from kproxy.protocol.layout_codec import Layout, LayoutWriter, Value
from kproxy.protocol.refusal import CLUSTER_AUTHORIZATION_FAILED, CONFIG_RESOURCE_APIS
from kproxy.protocol.renaming import MESSAGE, REGEX, rename, tenant_regex, topic_regex
from kproxy.session.audit import READ_LIMIT, read_request
from kproxy.session.authorization import Scope, address_of, matcher, networks, within

# What a tenant may call: its data, its groups, its transactions, its topics' admin.
TENANT_APIS: Final = frozenset(
    (
        *range(4),  # Produce, Fetch, ListOffsets, Metadata
        *range(8, 27),  # groups, coordinators, SASL, ApiVersions, topics, transactions
        *(28, 32, 33, 36, 37, 42, 44, 47, 60, 61, 65, 66),
        *(68, 69, 71, 72, 75, 76, 77, 78, 79, 90, 91, 92),  # KIP-848, KIP-932
    )
)
# Kafka's longest topic name (Topic.MAX_NAME_LENGTH); group and transactional ids are
# strings of at most 32,767 bytes.
MAX_TOPIC_NAME: Final = 249
MAX_STRING: Final = 32767
INVALID_TOPIC_EXCEPTION: Final = 17
INVALID_REQUEST: Final = 42


class TenantRefusal(Exception):
    """A request kproxy answers with `code` on every element: a name the prefix makes
    longer than Kafka allows (INVALID_TOPIC_EXCEPTION for a topic, INVALID_REQUEST
    otherwise), or a config resource of the cluster's own (CLUSTER_AUTHORIZATION_FAILED).
    """

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Tenant:
    """One tenant, compiled from `TenantSettings`."""

    __slots__ = ("addresses", "listeners", "name", "prefix", "principals", "server_names")

    def __init__(self, settings: Any) -> None:
        self.name: str = settings.name
        self.prefix: str = settings.names_prefix
        self.principals = matcher(settings.principals)
        self.server_names = matcher(settings.server_names)
        self.addresses = networks(settings.addresses)
        self.listeners: frozenset[str] | None = (
            None if settings.listeners is None else frozenset(settings.listeners)
        )

    def matches(self, principal: str, address: Any, server_name: str | None, listener: str) -> bool:
        if self.listeners is not None and listener not in self.listeners:
            return False
        if self.principals is not None and not self.principals.matches(principal):
            return False
        if self.server_names is not None and not (
            server_name is not None and self.server_names.matches(server_name.lower())
        ):
            return False
        return within(address, self.addresses)

    def to_cluster(self, kind: str, name: str) -> str:
        """A name the tenant sent, as the cluster knows it."""
        if kind == REGEX:
            return topic_regex(self.prefix, name)
        if not name or kind == MESSAGE:  # no name (the broker says so, as it would)
            return name
        named = self.prefix + name
        if kind == TOPIC and len(named) > MAX_TOPIC_NAME:
            raise TenantRefusal(
                f"topic {name!r} is {len(named)} characters with the tenant's prefix "
                f"{self.prefix!r}, over Kafka's {MAX_TOPIC_NAME}",
                INVALID_TOPIC_EXCEPTION,
            )
        if len(named.encode()) > MAX_STRING:
            raise TenantRefusal(f"{kind} {name[:64]!r}... is too long", INVALID_REQUEST)
        return named

    def to_tenant(self, kind: str, name: str) -> str | None:
        """A name the cluster answered with, as the tenant knows it (None: not its)."""
        if kind == MESSAGE:
            return name.replace(self.prefix, "")
        if kind == REGEX:
            return tenant_regex(self.prefix, name)
        if not name:
            return name
        if name.startswith(self.prefix):
            return name[len(self.prefix) :]
        return None


class Tenancy:
    """One listener's tenants, in order; shared by its sessions, replaced by a reload."""

    __slots__ = ("tenants", "unassigned_denied")

    def __init__(self, tenants: tuple[Tenant, ...], unassigned_denied: bool) -> None:
        self.tenants = tenants
        self.unassigned_denied = unassigned_denied

    @classmethod
    def from_settings(cls, settings: Any) -> Tenancy:
        """From `TenancySettings`."""
        return cls(tuple(Tenant(t) for t in settings.tenants), settings.unassigned == "deny")

    def assign(
        self, principal: str, host: str | None, server_name: str | None, listener: str
    ) -> Tenant | None:
        """The first tenant that matches a connection (None: none does)."""
        address = address_of(host)
        for tenant in self.tenants:
            if tenant.matches(principal, address, server_name, listener):
                return tenant
        return None


class TenantScope:
    """What a tenant's caller may touch: the names under its prefix (none, for a
    connection no tenant matched), the tenant APIs, and what the listener's rules
    (`inner`, matched on the names as the cluster knows them) allow besides."""

    __slots__ = ("inner", "prefix")

    def __init__(self, tenant: Tenant | None, inner: Scope | None) -> None:
        self.prefix = None if tenant is None else tenant.prefix
        self.inner = inner

    def api_allowed(self, api_key: int) -> bool:
        if api_key not in TENANT_APIS:
            return False
        return self.inner is None or self.inner.api_allowed(api_key)

    def allows(self, api_key: int, kind: str, name: str) -> bool:
        if self.prefix is None or not name.startswith(self.prefix):
            return False
        return self.inner is None or self.inner.allows(api_key, kind, name)


class Renamed(NamedTuple):
    """A request renamed for the cluster: read (`layout`, `value`), and written as
    `pieces` of `size` bytes (its records views of the client's frame, not copies)."""

    layout: Layout
    value: Value
    pieces: list[bytes | memoryview]
    size: int


def to_cluster(tenant: Tenant, hdr: RequestHeader, frame: memoryview) -> Renamed:
    """The request frame (no size prefix) with every name prefixed. Raises TenantRefusal
    for a name made too long or a config resource that is not a topic's or a
    group's (the cluster's own), and what `read_request` raises."""
    # Records as views of an immutable frame: a split request's refused part may hold
    # them until its answer comes (a reader's buffer is not to be pinned).
    layout, value = read_request(
        hdr,
        frame,
        "for its tenant",
        "tenant_too_large",
        keep_tagged=True,
        views=type(frame.obj) is bytes,
    )
    if hdr.api_key in CONFIG_RESOURCE_APIS:
        _own_configs_only(hdr, value)
    rename(hdr.api_key, layout, value, tenant.to_cluster)
    writer = LayoutWriter(is_flexible(hdr.api_key, hdr.api_version), READ_LIMIT)
    pieces = writer.pieces(layout, value, frame[: hdr.body_offset])
    return Renamed(layout, value, pieces, writer.size)


def _own_configs_only(hdr: RequestHeader, value: Value) -> None:
    for resource in value.get("Resources") or ():
        if resource.get("ResourceType") not in CONFIG_KINDS:  # a topic's or a group's
            raise TenantRefusal(
                f"{api_name(hdr.api_key)} of a config resource of type "
                f"{resource.get('ResourceType')}: only topics' and groups' are a tenant's",
                CLUSTER_AUTHORIZATION_FAILED,
            )
