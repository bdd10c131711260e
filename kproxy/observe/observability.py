"""What kproxy reports: `Observability`, the runtime's `ProxyObserver`. Every fact both
counted and logged is counted and queued at the same place, so with no events dropped the
event log's counts per type equal the metrics (`kproxy_events_dropped_total` says not)."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Container
from typing import TYPE_CHECKING, Any

from kproxy.observe import audit as described
from kproxy.observe.event_setup import open_event_log
from kproxy.observe.events import (
    AUDIT,
    CONNECTION,
    LEADER_CHANGE,
    NODE_DISCOVERED,
    RECOVERY,
    REDIRECT,
    REQUEST_SAMPLE,
    EventLog,
    format_ts,
    instance_id,
)
from kproxy.observe.leadership import NO_FACTS, LeaderTable, topic_id_text
from kproxy.observe.metrics import KproxyMetrics
from kproxy.observe.resumption import Resumption
from kproxy.observe.sampling import next_gap, sample_fields
from kproxy.observe.switchover_record import SwitchoverRecord
from kproxy.observe.worker_claims import WorkerClaims
from kproxy.protocol.apis import METADATA_TOPIC, api_name
from kproxy.protocol.walker import LeaderObservation
from kproxy.session.audit import REFUSE, AuditRecord
from kproxy.session.identity import Authentication
from kproxy.session.inflight import ResponseSeen
from kproxy.session.quota import QuotaBook

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kproxy.config.settings import Settings

log = logging.getLogger("kproxy.observability")


class Observability(SwitchoverRecord):
    """Metrics + leader table + event log behind the runtime's observer hooks."""

    def __init__(
        self,
        settings: Settings,
        *,
        registry: CollectorRegistry | None = None,
        leader_table: LeaderTable | None = None,
        instance: str | None = None,
        sample: Callable[[], float] = random.random,
        runtime_collectors: bool = True,
        claims: WorkerClaims | None = None,
    ) -> None:
        self.settings = settings
        # Under runtime.workers: a leader change or a node several workers see is
        # counted and logged by the first (kproxy.observe.worker_claims).
        self.claims = claims
        self.instance = instance or instance_id()
        self.metrics = KproxyMetrics(
            topic_labels=settings.metrics.topic_labels,
            principal_labels=settings.metrics.principal_labels,
            registry=registry,
            runtime_collectors=runtime_collectors,
        )
        self.hot = self.metrics.hot  # frames and latency, every request: one call less
        self.leaders_table = leader_table if leader_table is not None else LeaderTable()
        self.resumption = Resumption()  # after a switchover (kproxy.observe.switchover_record)
        self.metrics.quorum_leader.set_function(lambda: self._quorum_gauge(0))  # at scrape
        self.metrics.quorum_epoch.set_function(lambda: self._quorum_gauge(1))
        ev = settings.events
        self.sample_rate = ev.request_sample_rate if ev.enabled else 0.0
        self._sample = sample
        # Responses until the next request sample, that one included (kproxy.observe.sampling).
        self._until_sample = next_gap(self.sample_rate, sample)
        self.events: EventLog | None = None
        # The events producer's client id when it publishes through this kproxy: its
        # requests are kproxy's own, not a client's, and stay out of redirect metrics.
        self.own_client_id: str | None = None
        self._proxy_bootstrap: str | None = None
        if ev.enabled:
            self.events, self.own_client_id = open_event_log(
                settings, self.instance, self.metrics, lambda: self._proxy_bootstrap
            )
        # Plain counts for `kproxy demo`'s status line.
        self.leader_changes = 0
        self.redirects_with_leader = 0
        self.redirects_with_endpoint = 0
        self.redirects_without_leader = 0
        self.recoveries = 0

    def start_events(self, proxy_bootstrap: str) -> None:
        """Start the event log's writer: kproxy's bootstrap (a `proxy` Kafka sink's) is up."""
        self._proxy_bootstrap = proxy_bootstrap
        if self.events is not None:
            self.events.start()

    @property
    def publishes_through_proxy(self) -> bool:
        return self.own_client_id is not None

    def flush_events(self, timeout: float) -> bool:
        """Wait (blocking) until every event so far has landed in every sink."""
        return self.events.flush(timeout) if self.events is not None else True

    def _emit(self, event_type: str, fields: dict[str, Any]) -> None:
        events = self.events
        if events is not None:
            events.emit(event_type, fields)

    # -- ProxyObserver ---------------------------------------------------------------------
    def connection_opened(self, listener: str, address: str | None = None) -> None:
        self.metrics.connection_opened(listener)
        self._emit(CONNECTION, described.connection_fields("open", listener, None, None, address))

    def connection_closed(
        self,
        listener: str,
        cause: str,
        principal: str | None = None,
        address: str | None = None,
        tenant: str | None = None,
    ) -> None:
        self.metrics.connection_closed(listener, cause, principal)
        fields = described.connection_fields("close", listener, cause, principal, address, tenant)
        self._emit(CONNECTION, fields)

    def authenticated(self, listener: str, address: str, auth: Authentication) -> None:
        self.metrics.authenticated(described.authentication_labels(listener, auth), auth.principal)
        self._emit(AUDIT, described.authentication_fields(listener, address, auth))

    def audited(
        self,
        listener: str,
        address: str,
        principal: str,
        record: AuditRecord,
        tenant: str | None = None,
    ) -> None:
        if record.action == REFUSE:
            self.metrics.requests_refused.labels(record.api, listener).inc()
        self.metrics.audit_records.labels(listener, record.action, record.outcome).inc()
        self._emit(AUDIT, described.audit_fields(listener, address, principal, record, tenant))

    def tenant_requests(self, tenant: str, requests: list[tuple[int, int]]) -> None:
        counter = self.metrics.tenant_requests
        for api_key, _size in requests:
            counter.labels(tenant, api_name(api_key)).inc()

    def quotas_configured(self, book: QuotaBook) -> None:
        self.metrics.quotas.book = book

    def connection_refused(self, listener: str, reason: str) -> None:
        self.metrics.connections_refused.labels(listener, reason).inc()

    def accept_error(self, reason: str) -> None:
        self.metrics.accept_errors.labels(reason).inc()

    def listener_bind_failed(self, listener: str) -> None:
        self.metrics.listener_bind_failures.labels(listener).inc()

    def proxy_header_error(self, reason: str) -> None:
        self.metrics.proxy_header_errors.labels(reason).inc()

    def requests_held(self, listener: str, count: int) -> None:
        self.metrics.requests_held.labels(listener).inc(count)

    def frame_error(self, side: str, reason: str) -> None:
        self.metrics.frame_errors.labels(side, reason).inc()

    def upstream_connect_failed(self, address: str, reason: str) -> None:
        self.metrics.upstream_connect_failures.labels(reason).inc()

    def tls_handshake_failed(self, side: str, reason: str) -> None:
        self.metrics.tls_handshake_failures.labels(side, reason).inc()

    def tls_reloaded(self, result: str) -> None:
        self.metrics.tls_reloads.labels(result).inc()

    def config_loaded(self, fingerprint: str, restart_pending: bool) -> None:
        info = self.metrics.config_info
        info.clear()
        info.labels(fingerprint, "true" if restart_pending else "false").set(1)

    def config_reloaded(self, result: str) -> None:
        self.metrics.config_reloads.labels(result).inc()

    def frame(self, api_key: int, direction: str, size: int) -> None:
        self.hot.frame(api_key, direction, size)

    def response(
        self,
        api_key: int,
        version: int,
        client_id: str | None,
        total_seconds: float,
        upstream_seconds: float,
    ) -> None:
        self.hot.response(api_key, total_seconds, upstream_seconds)
        self._toward_sample(api_key, version, client_id, total_seconds, upstream_seconds)

    # What every read forwards: one call each way, not one per frame (kproxy.observe.hot_metrics).
    def requests_forwarded(self, requests: list[tuple[int, int]]) -> None:
        self.hot.requests(requests)

    def requests_counter(self) -> Callable[[list[tuple[int, int]]], None]:
        return self.hot.requests

    def responses_forwarded(self, responses: list[ResponseSeen], done: float) -> None:
        out = self.hot.response_out
        for seen in responses:  # `hot.responses`, inline: a call less on every read
            out(seen.api_key, seen.size, done - seen.received, seen.upstream_seconds)
        n = self._until_sample
        if n > len(responses):  # `_toward_sample`'s countdown, none of them sampled
            self._until_sample = n - len(responses)
        elif n:
            for seen in responses:
                total = done - seen.received
                self._toward_sample(
                    seen.api_key, seen.version, seen.client_id, total, seen.upstream_seconds
                )

    def _toward_sample(
        self, key: int, version: int, client: str | None, total: float, upstream: float
    ) -> None:
        """One response toward the next request sample: the one a gap ends on, unless
        kproxy's own events producer sent it (counted in the gaps, never sampled)."""
        n = self._until_sample
        if n > 1:
            self._until_sample = n - 1
        elif n:
            self._until_sample = next_gap(self.sample_rate, self._sample)
            if client is None or client != self.own_client_id:
                self._emit(REQUEST_SAMPLE, sample_fields(key, version, client, total, upstream))

    def leaders(
        self,
        api_key: int,
        client_id: str | None,
        node_id: int | None,
        observations: list[LeaderObservation],
        endpoint_nodes: frozenset[int],
    ) -> None:
        facts = self.leaders_table.observe(
            api_key, client_id, node_id, observations, endpoint_nodes
        )
        self.resumed(api_key, client_id, observations)  # after a switchover, a client's first?
        if facts is NO_FACTS:
            return
        if client_id is not None and client_id == self.own_client_id:
            # kproxy's own events producer: the leader changes it saw are the cluster's,
            # its redirects and recoveries are not a client's.
            facts = facts._replace(redirects=(), recoveries=())
        metrics = self.metrics
        claims = self.claims
        for change in facts.changes:
            if claims is not None and not claims.first(
                f"leader {change.topic} {change.partition}",
                -1 if change.new_epoch is None else change.new_epoch,
                change.new_leader,
            ):
                continue
            self.leader_changes += 1
            source = api_name(change.source_api)
            metrics.leader_change(change.source_api, change.topic)
            log.debug(
                "leader of %s-%d: %d -> %d (epoch %s -> %s), first seen in %s",
                change.topic,
                change.partition,
                change.old_leader,
                change.new_leader,
                change.old_epoch,
                change.new_epoch,
                source,
            )
            self._emit(
                LEADER_CHANGE,
                {
                    "topic": change.topic,
                    "topic_id": topic_id_text(change.topic_id),
                    "partition": change.partition,
                    "old_leader": change.old_leader,
                    "new_leader": change.new_leader,
                    "old_epoch": change.old_epoch,
                    "new_epoch": change.new_epoch,
                    "source_api": source,
                },
            )
        for redirect in facts.redirects:
            if redirect.to_node is None:
                self.redirects_without_leader += 1
            else:
                self.redirects_with_leader += 1
                if redirect.with_endpoint:
                    self.redirects_with_endpoint += 1
            metrics.redirect(redirect.api_key, redirect.from_node, redirect.to_node)
            self._emit(
                REDIRECT,
                {
                    "api": api_name(redirect.api_key),
                    "client_id": redirect.client_id,
                    "topic": redirect.topic,
                    "topic_id": topic_id_text(redirect.topic_id),
                    "partition": redirect.partition,
                    "error_code": redirect.error_code,
                    "from_node": redirect.from_node,
                    "to_node": redirect.to_node,
                    "with_endpoint": redirect.with_endpoint,
                },
            )
        for recovery in facts.recoveries:
            self.recoveries += 1
            metrics.recovery(recovery.seconds, recovery.with_endpoint)
            self._emit(
                RECOVERY,
                {
                    "topic": recovery.topic,
                    "topic_id": topic_id_text(recovery.topic_id),
                    "partition": recovery.partition,
                    "client_id": recovery.client_id,
                    "ms": round(recovery.seconds * 1000.0, 3),
                    "with_endpoint": recovery.with_endpoint,
                },
            )

    def endpoints(self, api_key: int, rewritten: int, removed: int) -> None:
        self.metrics.endpoints(api_key, rewritten, removed)

    def node_discovered(self, node_id: int, upstream: str, advertised: str) -> None:
        claims = self.claims
        if claims is not None and not claims.first(f"node {node_id} {upstream} {advertised}", 0, 0):
            return
        self.metrics.nodes_discovered.inc()
        fields = {"node_id": node_id, "upstream": upstream, "advertised": advertised}
        self._emit(NODE_DISCOVERED, fields)

    def configs_redacted(self, api_key: int, count: int) -> None:
        self.metrics.config_values_redacted.labels(api_name(api_key)).inc(count)

    def response_streamed(self, api_key: int, tail: str) -> None:
        self.hot.response_streamed(api_key, tail)

    def response_trimmed(self, api_key: int, size: int) -> None:
        self.metrics.responses_trimmed.labels(api_name(api_key)).inc()

    def api_versions_clamped(self, dropped: int, lowered: int) -> None:
        self.metrics.api_versions_clamped.inc()

    def cluster_reached(self) -> None:
        self.metrics.cluster_reached.set(1)

    # -- what the admin server and the demo read ------------------------------------------------
    def clients_awaiting_success(self) -> Container[str]:
        # The table's own dict, changed in place: the sessions test it with `in`.
        return self.leaders_table.clients_awaiting_success

    def quorum_leader(self) -> tuple[int, int | None] | None:
        """(leader id, epoch) of the KRaft quorum as kproxy last saw it pass (KIP-853)."""
        return self.leaders_table.leader(METADATA_TOPIC, 0)

    def _quorum_gauge(self, which: int) -> float:
        value = None if (seen := self.quorum_leader()) is None else seen[which]
        return -1.0 if value is None else float(value)

    def partitions(self, topic: str | None = None) -> list[dict[str, Any]]:
        """Every known partition's leader as kproxy last saw it (for /topology)."""
        return [
            {
                "topic": p.topic,
                "topic_id": p.topic_id,
                "partition": p.partition,
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "changed_at": format_ts(p.changed_at) if p.changed_at is not None else None,
            }
            for p in self.leaders_table.snapshot()
            if topic is None or p.topic == topic
        ]

    def summary(self) -> str:
        """One line for `kproxy demo`: what kproxy saw of the cluster's leadership."""
        return (
            f"{self.leader_changes} leader changes, "
            f"{self.redirects_with_leader} redirects to a new leader "
            f"({self.redirects_with_endpoint} with its endpoint), "
            f"{self.redirects_without_leader} without one, {self.recoveries} recoveries"
        )

    def close(self) -> None:
        """Write out the event log (blocks until it is written: call at shutdown)."""
        if self.events is not None:
            self.events.close()
        if self.claims is not None:
            self.claims.close()
