"""A request in flight, and once answered what its response was: one per request, made
and read on every round trip, so it lives in a module of its own that the mypyc build
compiles (records.py's NamedTuples keep that module in Python).

The same object carries the response's facts to the observer (`UpstreamStep.responses`):
a round trip makes one record, not a second one for its response."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kproxy.protocol.walker import LeaderObservation

if TYPE_CHECKING:
    from kproxy.session.audit import AuditRecord
    from kproxy.session.quota import QuotaBucket
    from kproxy.session.response_edit import ResponseEdit

NO_NODES: Final[frozenset[int]] = frozenset()


class InFlight:
    """A request waiting for its response; then, answered, the response it got."""

    __slots__ = (
        "api_key",
        "audit",
        "authz",
        "client_id",
        "endpoint_nodes",
        "header_version",
        "leaders",
        "quota",
        "received",
        "removed",
        "rewritten",
        "size",
        "then",
        "throttle_ms",
        "transactional_id",
        "upstream_seconds",
        "version",
    )

    def __init__(
        self, api_key: int, version: int, header_version: int, client_id: str | None, now: float
    ) -> None:
        self.api_key = api_key
        self.version = version
        self.header_version = header_version  # of the response
        self.client_id = client_id
        self.received = now  # arrived from the client and was forwarded at once
        # What kproxy answered itself to requests the client sent after this one (a
        # refusal, KIP-511's ApiVersions answer): sent right after this one's response,
        # as a broker keeps a connection's responses in order. None: nothing.
        self.then: list[bytes] | None = None
        # A quota's throttle (`kproxy.session.quota`) its response is to carry in its
        # throttle_time_ms (KIP-219); 0: none.
        self.throttle_ms = 0
        # The quota its response is charged to or carries a throttle of: the general
        # path's (`kproxy.session.release.throttled`). None: nothing to do.
        self.quota: QuotaBucket | None = None
        # A request that changes the cluster, to complete with its response's outcome
        # (`kproxy.session.audit`); None: not audited.
        self.audit: AuditRecord | None = None
        # What the listener's authorization does to its response
        # (`kproxy.session.response_edit`); None: nothing.
        self.authz: ResponseEdit | None = None
        # The transactional id it names, to note once answered without error
        # (`kproxy.session.transactions`); None: not a transaction request.
        self.transactional_id: str | None = None
        # Its response, once sent to the client (`answered`).
        self.size = 0  # bytes sent to the client (after any rewrite)
        self.upstream_seconds = 0.0  # request sent -> response back
        self.leaders: list[LeaderObservation] | None = None  # leadership it carried, if walked
        self.endpoint_nodes = NO_NODES  # node ids of the endpoints it carried
        self.rewritten = 0
        self.removed = 0

    def answered(self, size: int, upstream_seconds: float) -> InFlight:
        """This request, its response of `size` bytes sent to the client."""
        self.size = size
        self.upstream_seconds = upstream_seconds
        return self


# What the observer is handed for each response sent: its request, answered.
ResponseSeen = InFlight


def response_seen(
    api_key: int,
    version: int,
    client_id: str | None,
    size: int,
    received: float,
    upstream_seconds: float,
    leaders: list[LeaderObservation] | None = None,
    endpoint_nodes: frozenset[int] = NO_NODES,
    rewritten: int = 0,
    removed: int = 0,
) -> InFlight:
    """A response sent, with what it carried (the general path's, and tests')."""
    seen = InFlight(api_key, version, 0, client_id, received).answered(size, upstream_seconds)
    seen.leaders = leaders
    seen.endpoint_nodes = endpoint_nodes
    seen.rewritten = rewritten
    seen.removed = removed
    return seen
