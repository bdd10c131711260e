"""What the runtime reports as it forwards: the hooks metrics and the event log use.

Every method is called after the bytes it describes were handed to the transport
(forward first, observe after), and must not block.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any

from kproxy.protocol.walker import LeaderObservation
from kproxy.session.audit import AuditRecord
from kproxy.session.identity import Authentication
from kproxy.session.inflight import ResponseSeen
from kproxy.session.quota import QuotaBook
from kproxy.session.state import SessionState


class ProxyObserver:
    """No-op base: subclasses override what they record."""

    def connection_opened(self, listener: str, address: str | None = None) -> None:
        pass

    def clients_awaiting_success(self) -> Container[str]:
        """The client ids ("" for none) whose next success ends a redirect's recovery
        (their plain Produce and Fetch responses are walked too): a live view, kept by
        every connection and read with `in` for every such response."""
        return frozenset()

    def quorum_leader(self) -> tuple[int, int | None] | None:
        """(leader id, epoch) of the KRaft quorum, when kproxy has seen one."""
        return None

    def connection_closed(
        self,
        listener: str,
        cause: str,
        principal: str | None = None,
        address: str | None = None,
        tenant: str | None = None,
    ) -> None:
        pass

    def authenticated(self, listener: str, address: str, auth: Authentication) -> None:
        """A client's SASL exchange ended (`kproxy.session.identity`)."""

    def quotas_configured(self, book: QuotaBook) -> None:
        """The client quotas every connection charges (read at each scrape)."""

    def connection_refused(self, listener: str, reason: str) -> None:
        """A connection accepted and closed at once (a limit, shutdown)."""

    def accept_error(self, reason: str) -> None:
        """The kernel refused kproxy a new connection's descriptor (EMFILE, ENFILE)."""

    def listener_bind_failed(self, listener: str) -> None:
        """A listener kproxy needs could not be opened (retried with backoff)."""

    def proxy_header_error(self, reason: str) -> None:
        """A client connection closed for its PROXY protocol header (or its absence)."""

    def requests_held(self, listener: str, count: int) -> None:
        """Requests read past the in-flight limit, waiting for a slot."""

    def frame_error(self, side: str, reason: str) -> None:
        pass

    def upstream_connect_failed(self, address: str, reason: str) -> None:
        pass

    def tls_handshake_failed(self, side: str, reason: str) -> None:
        """A TLS handshake with a client or a broker failed
        (`kproxy.runtime.tls.failure_reason`)."""

    def config_loaded(self, fingerprint: str, restart_pending: bool) -> None:
        """The configuration now running (at start and after each reload)."""

    def config_reloaded(self, result: str) -> None:
        """A reload's outcome (`kproxy.config.reload_table.ReloadPlan.result`, or rejected)."""

    def tls_reloaded(self, result: str) -> None:
        """The listeners' certificates were loaded again (success) or could not be."""

    def frame(self, api_key: int, direction: str, size: int) -> None:
        pass

    def requests_counter(self) -> Callable[[list[tuple[int, int]]], None]:
        """What counts a read's requests, as `requests_forwarded` (taken once: a subclass
        may hand its counter itself, a call less on every read)."""
        return self.requests_forwarded

    def requests_forwarded(self, requests: list[tuple[int, int]]) -> None:
        """Requests, as (api key, frame size), handed to the broker's transport."""
        for api_key, size in requests:
            self.frame(api_key, "request", size)

    def responses_forwarded(self, responses: list[ResponseSeen], done: float) -> None:
        """Responses handed to the client's transport, whose write ended at `done`."""
        for seen in responses:
            key = seen.api_key
            self.frame(key, "response", seen.size)
            self.response(
                key, seen.version, seen.client_id, done - seen.received, seen.upstream_seconds
            )

    def response(
        self,
        api_key: int,
        version: int,
        client_id: str | None,
        total_seconds: float,
        upstream_seconds: float,
    ) -> None:
        pass

    def leaders(
        self,
        api_key: int,
        client_id: str | None,
        node_id: int | None,
        observations: list[LeaderObservation],
        endpoint_nodes: frozenset[int],
    ) -> None:
        """Partition leadership seen in one response.

        `node_id` is the node whose listener the response came through (None for the
        bootstrap listener); `endpoint_nodes` are the node ids of the endpoints the same
        response carried (KIP-951 NodeEndpoints), so a redirect can tell whether the
        client was handed the new leader's address.
        """

    def endpoints(self, api_key: int, rewritten: int, removed: int) -> None:
        pass

    def node_discovered(self, node_id: int, upstream: str, advertised: str) -> None:
        pass

    def api_versions_clamped(self, dropped: int, lowered: int) -> None:
        pass

    def audited(
        self,
        listener: str,
        address: str,
        principal: str,
        record: AuditRecord,
        tenant: str | None = None,
    ) -> None:
        """A request that changed the cluster, with its outcome, or one the listener's API
        policy refused (`kproxy.session.audit`); `tenant`: the caller's, if any."""

    def tenant_requests(self, tenant: str, requests: list[tuple[int, int]]) -> None:
        """A tenant's requests, as (api key, frame size), handed to the broker's transport
        (`kproxy.session.tenancy`)."""

    def configs_redacted(self, api_key: int, count: int) -> None:
        """Configuration values that named addresses, withheld from a client."""

    def response_streamed(self, api_key: int, tail: str) -> None:
        """A response forwarded as it arrived, and what its tail became."""

    def response_trimmed(self, api_key: int, size: int) -> None:
        """A response's `size` bytes after its message, kept from the client."""

    def cluster_reached(self) -> None:
        pass

    def active_cluster(self, name: str, names: list[str]) -> None:
        """`name` of the configured `names` is served now (kproxy.runtime.switchover)."""

    def switchover(
        self, phase: str, trigger: str, source: str, target: str, facts: dict[str, Any]
    ) -> None:
        """A switchover fenced, completed or was refused; `facts` as its summary says."""

    def switchover_held(self) -> None:
        """A new connection waits for a switchover's fence before it dials."""

    def resumption_watch(self, session: SessionState) -> Container[str] | None:
        """A new session's own view of the awaited clients while a switchover's clients
        are watched (`kproxy.observe.resumption`); None for the shared one."""
        return None
