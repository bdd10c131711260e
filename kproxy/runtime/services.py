"""What every connection of one kproxy process shares."""

from __future__ import annotations

import asyncio
import logging
import ssl

from kproxy.config.principals import PrincipalSettings
from kproxy.config.proxy_protocol import ProxyProtocolSettings
from kproxy.protocol.apis import api_name
from kproxy.runtime.discovery import ClusterDiscovery, NodeReports
from kproxy.runtime.listeners import ListenerSet
from kproxy.runtime.mapping import AddressMap
from kproxy.runtime.observer import ProxyObserver
from kproxy.runtime.principals import Principals
from kproxy.runtime.quorum import QuorumMap
from kproxy.runtime.ratelog import RateLimitedLog
from kproxy.runtime.registry import Connection, ConnectionRegistry
from kproxy.runtime.tls import ServerTls
from kproxy.runtime.tls import failure_reason as tls_failure_reason
from kproxy.runtime.tls import failure_text as tls_failure_text
from kproxy.session import ProxySession, ResponseSeen, SessionClose, SessionLimits, UpstreamStep
from kproxy.session.audit import AuditRecord
from kproxy.session.policy import ApiPolicy
from kproxy.session.quota import QuotaBook
from kproxy.session.steps import UpstreamFacts

log = logging.getLogger("kproxy.connection")


class ConnectionServices:
    """The shared parts a connection uses: mapping, listeners, observer, limits."""

    def __init__(
        self,
        addresses: AddressMap,
        listeners: ListenerSet,
        discovery: ClusterDiscovery,
        reports: NodeReports,
        registry: ConnectionRegistry,
        observer: ProxyObserver,
        limits: SessionLimits,
        refused_apis: frozenset[int],
        api_policy: ApiPolicy,
        write_buffer_high: int,
        connect_timeout: float,
        client_tls: ServerTls | None = None,
        upstream_tls: ssl.SSLContext | None = None,
        quorum: QuorumMap | None = None,
        proxy_protocol: ProxyProtocolSettings | None = None,
        quotas: QuotaBook | None = None,
        principals: Principals | None = None,
    ) -> None:
        self.addresses = addresses
        self.listeners = listeners
        # Who is calling: the principals settings in force (kproxy.runtime.principals).
        self.principals = principals or Principals(PrincipalSettings(), observer)
        self.discovery = discovery
        # Whether a response has been relayed: one native flag read per response, where
        # `discovery.reached` is an attribute of a Python object (mark_reached is idempotent).
        self.relayed = False
        self.reports = reports
        self.registry = registry
        self.observer = observer
        # What a read's requests are counted with (`ProxyObserver.requests_counter`).
        self.count_requests = observer.requests_counter()
        # The observer's live view, shared by every connection's session.
        self.awaiting_success = observer.clients_awaiting_success()
        self.limits = limits
        self.refused_apis = refused_apis  # by this proxy's listeners (listeners.role)
        self.api_policy = api_policy  # listeners.api_policy, shared: a reload updates it
        self.write_buffer_high = write_buffer_high
        self.connect_timeout = connect_timeout
        self.client_tls = client_tls  # listeners.tls: clients handshake before anything
        self.upstream_tls = upstream_tls  # cluster.tls
        self.quorum = quorum  # quorum.controllers, when kproxy carries a KRaft quorum
        # listeners.proxy_protocol, when a header is read (mode optional or required)
        self.proxy_protocol = proxy_protocol
        # Set while a switchover fences (kproxy.runtime.switchover): new connections wait
        # for it before they dial.
        self.fence: asyncio.Event | None = None
        self.quotas = quotas  # client quotas (`quotas`), one book shared by every connection
        # Controller ports serve the whole controller plane and refuse nothing: the
        # controller behind each answers as it would on its own listener.
        self.controller_policy = ApiPolicy("controller")
        self.held_log = RateLimitedLog(log)
        self.tls_log = RateLimitedLog(log)
        self.refused_log = RateLimitedLog(log)
        self.trimmed_log = RateLimitedLog(log)

    def requests_held(self, conn: Connection, count: int) -> None:
        """A client pipelined past the in-flight limit: the rest wait, reading pauses."""
        self.observer.requests_held(conn.listener, count)
        self.held_log.warning(
            "in_flight_limit",
            "client %s on %s reached %d requests in flight: %d more wait, reading paused",
            conn.peer,
            conn.listener,
            self.limits.max_in_flight_requests,
            count,
        )

    def new_session(self, controller: bool) -> ProxySession:
        """A new client connection's session: a controller's (the KRaft quorum through
        kproxy, its own policy) or a client's."""
        quorum = self.quorum
        if quorum is not None and controller:
            return ProxySession(quorum, self.limits, frozenset(), self.controller_policy, quorum)
        session = ProxySession(
            self.addresses,
            self.limits,
            self.refused_apis,
            self.api_policy,
            quorum,
            self.awaiting_success,
            quotas=self.quotas,
        )
        session.oauthbearer_claim = self.principals.claim
        watch = self.observer.resumption_watch(session)
        if watch is not None:  # after a switchover: its clients' first successes are timed
            session.awaiting_success = watch
        return session

    def refused(self, conn: Connection, refused: list[AuditRecord]) -> None:
        """Requests the listener's API policy refused, answered with an authorization
        error: a log line per API (rate-limited), a count and an audit record each."""
        listener, principal, tenant = self.api_policy.listener, conn.principal, conn.tenant
        who = _who(principal, tenant)
        for record in refused:
            self.observer.audited(conn.listener, conn.peer_ip, principal, record, tenant)
            why = (
                f"{', '.join(record.resources)} refused by listener {listener!r}'s authorization"
                if record.by_rules
                else f"not allowed on listener {listener!r} (api_policy)"
            )
            self.refused_log.warning(
                record.api,
                "refused %s from client %s (%s) on %s: %s",
                record.api,
                conn.peer,
                who,
                conn.listener,
                why,
            )

    def audited(self, conn: Connection, changes: list[AuditRecord]) -> None:
        """Requests that changed the cluster, answered: a log line and an audit record each."""
        principal, tenant = conn.principal, conn.tenant
        who = _who(principal, tenant)
        for record in changes:
            self.observer.audited(conn.listener, conn.peer_ip, principal, record, tenant)
            log.info(
                "%s by %s from client %s on %s: %s %s%s",
                record.api,
                who,
                conn.peer,
                conn.listener,
                record.outcome,
                ", ".join(record.resources) or "(no resource named)",
                f" (errors {record.errors})" if record.errors else "",
            )

    def learned(self, step: UpstreamStep) -> None:
        """Report the nodes a step learned (before what names them is sent)."""
        more = step.more
        if more is None or not more.learned:
            return
        for node_id, host, port in more.learned:
            self.reports.learned(node_id, host, port)
        more.learned = []

    def failed(self, conn: Connection, why: SessionClose) -> None:
        """Bad bytes: close this pair with a log line and a metric; nothing else notices."""
        self.observer.frame_error(why.side, why.reason)
        log.warning(
            "closing client %s on %s: bad %s frame (%s): %s",
            conn.peer,
            conn.listener,
            why.side,
            why.reason,
            why.message,
        )
        conn.close(why.cause)

    def tls_failed(self, conn: Connection, exc: BaseException) -> None:
        """A client's TLS handshake failed: close it with a log line and a metric."""
        reason = tls_failure_reason(exc)
        self.observer.tls_handshake_failed("client", reason)
        self.tls_log.warning(
            reason,
            "closing client %s on %s: TLS handshake failed (%s): %s",
            conn.peer,
            conn.listener,
            reason,
            tls_failure_text(exc),
        )
        conn.close("tls_handshake_failed")

    def _relay_began(self) -> None:
        self.relayed = True
        self.discovery.mark_reached()

    def observe_responses(self, step: UpstreamStep, node_id: int | None, done: float) -> None:
        """Hand what a step forwarded to the observer: after the write, never before
        (requests that waited for a slot and went out with it included)."""
        if not self.relayed:
            self._relay_began()
        self.observer.responses_forwarded(step.responses, done)
        if step.more is not None:  # none for most reads: nothing walked, nothing released
            self._observe_facts(step.more, step.responses, node_id)

    def _observe_facts(
        self, more: UpstreamFacts, responses: list[ResponseSeen], node_id: int | None
    ) -> None:
        obs = self.observer
        if more.requests:
            obs.requests_forwarded(more.requests)
        for seen in responses:
            key = seen.api_key
            if seen.leaders:
                obs.leaders(key, seen.client_id, node_id, seen.leaders, seen.endpoint_nodes)
            if seen.rewritten or seen.removed:
                obs.endpoints(key, seen.rewritten, seen.removed)
        for dropped, lowered in more.clamped:
            obs.api_versions_clamped(dropped, lowered)
        for api_key, count in more.redacted:
            obs.configs_redacted(api_key, count)
        for api_key, tail in more.streamed:
            obs.response_streamed(api_key, tail)
        for api_key, size in more.trimmed:
            obs.response_trimmed(api_key, size)
            name = api_name(api_key)
            self.trimmed_log.warning(
                name,
                "a %s response from %s carried %d byte(s) after its message, kept from "
                "the client (kproxy_responses_trimmed_total)",
                name,
                "the bootstrap broker" if node_id is None else f"node {node_id}",
                size,
            )
        for unmapped in more.unmapped:
            self.reports.unmapped(unmapped)


def _who(principal: str, tenant: str | None) -> str:
    """A caller in a log line: its principal, and its tenant when it has one."""
    return principal if tenant is None else f"{principal} of tenant {tenant}"
