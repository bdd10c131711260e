"""kproxy's metrics in a Prometheus registry, made from their declarations
(`kproxy.observe.metric_specs`, where every metric is declared once). Labels are bounded: API
names (about a hundred Kafka APIs), node ids (bounded by the cluster's size), listener
names (one per node), and small fixed sets of causes and reasons.

Each `KproxyMetrics` has its own `CollectorRegistry`, so tests can make several. What
every frame and response updates is counted by `kproxy.observe.hot_metrics` and made into
samples at scrape time.
"""

from __future__ import annotations

from typing import cast

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.exposition import choose_encoder

from kproxy import __version__
from kproxy.observe import metric_specs as specs
from kproxy.observe.build_info import event_loop_kind, hot_path_build
from kproxy.observe.hot_metrics import HOT_PATH_SPECS, HotPathMetrics
from kproxy.observe.metric_specs import (
    BOOTSTRAP_NODE,
    COUNTER,
    GAUGE,
    HISTOGRAM,
    METRICS,
    WITH_ENDPOINT,
    WITHOUT_ENDPOINT,
    MetricSpec,
    series_names,
)
from kproxy.observe.quota_metrics import QUOTA_SPECS, QuotaMetrics
from kproxy.protocol.apis import METADATA_TOPIC, api_name
from kproxy.session.audit import AUTHENTICATE

__all__ = [
    "COUNTER",
    "GAUGE",
    "HISTOGRAM",
    "METRICS",
    "KproxyMetrics",
    "MetricSpec",
    "series_names",
]

# The `_created` series that prometheus_client adds beside every counter and histogram
# double the series count and nothing in kproxy's dashboards reads them (process start
# time is in process_start_time_seconds). The switch is process-wide; kproxy owns its
# process.
disable_created_metrics()  # type: ignore[no-untyped-call]


def node_label(node_id: int | None) -> str:
    return BOOTSTRAP_NODE if node_id is None else str(node_id)


def path_label(with_endpoint: bool) -> str:
    return WITH_ENDPOINT if with_endpoint else WITHOUT_ENDPOINT


class KproxyMetrics:
    """kproxy's metrics in their own registry, with recording methods for the hot path."""

    def __init__(
        self,
        *,
        topic_labels: bool = False,
        principal_labels: int = 0,
        registry: CollectorRegistry | None = None,
        runtime_collectors: bool = True,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.topic_labels = topic_labels
        reg = self.registry
        made = {
            spec: _make(spec, reg)
            for spec in METRICS
            if (topic_labels or not spec.topic_labels_only)
            and (principal_labels or not spec.principal_labels_only)
            and spec not in HOT_PATH_SPECS
            and spec not in QUOTA_SPECS
        }
        # Frames, bytes, latency and streamed responses: plain counts, made into samples
        # at scrape time.
        self.hot = HotPathMetrics()
        reg.register(self.hot)
        self.quotas = QuotaMetrics()  # client quotas, read from their book at scrape time
        reg.register(self.quotas)
        self.leader_changes = cast(Counter, made[specs.LEADER_CHANGES])
        self.leader_changes_by_topic = cast(
            "Counter | None", made.get(specs.LEADER_CHANGES_BY_TOPIC)
        )
        self.redirects = cast(Counter, made[specs.REDIRECTS])
        self.redirects_without_leader = cast(Counter, made[specs.REDIRECTS_WITHOUT_LEADER])
        self.recoveries = cast(Counter, made[specs.RECOVERIES])
        self.recovery_seconds = cast(Histogram, made[specs.RECOVERY_SECONDS])
        self.endpoint_rewrites = cast(Counter, made[specs.ENDPOINT_REWRITES])
        self.endpoints_unmapped = cast(Counter, made[specs.ENDPOINTS_UNMAPPED])
        self.nodes_discovered = cast(Counter, made[specs.NODES_DISCOVERED])
        self.config_values_redacted = cast(Counter, made[specs.CONFIG_VALUES_REDACTED])
        self.responses_trimmed = cast(Counter, made[specs.RESPONSES_TRIMMED])
        self.requests_refused = cast(Counter, made[specs.REQUESTS_REFUSED])
        self.authentications = cast(Counter, made[specs.AUTHENTICATIONS])
        self.audit_records = cast(Counter, made[specs.AUDIT_RECORDS])
        self.tenant_requests = cast(Counter, made[specs.TENANT_REQUESTS])
        # metrics.principal_labels: the principals labelled so far, at most that many.
        self.principal_labels = principal_labels
        self.labelled_principals: set[str] = set()
        self.principal_authentications = cast(
            Counter | None, made.get(specs.PRINCIPAL_AUTHENTICATIONS)
        )
        self.principal_connections_closed = cast(
            Counter | None, made.get(specs.PRINCIPAL_CONNECTIONS_CLOSED)
        )
        self.api_versions_clamped = cast(Counter, made[specs.API_VERSIONS_CLAMPED])
        self.connections_opened = cast(Counter, made[specs.CONNECTIONS_OPENED])
        self.connections_active = cast(Gauge, made[specs.CONNECTIONS_ACTIVE])
        self.connections_closed = cast(Counter, made[specs.CONNECTIONS_CLOSED])
        self.frame_errors = cast(Counter, made[specs.FRAME_ERRORS])
        self.connections_refused = cast(Counter, made[specs.CONNECTIONS_REFUSED])
        self.accept_errors = cast(Counter, made[specs.ACCEPT_ERRORS])
        self.listener_bind_failures = cast(Counter, made[specs.LISTENER_BIND_FAILURES])
        self.proxy_header_errors = cast(Counter, made[specs.PROXY_HEADER_ERRORS])
        self.requests_held = cast(Counter, made[specs.REQUESTS_HELD])
        self.upstream_connect_failures = cast(Counter, made[specs.UPSTREAM_CONNECT_FAILURES])
        self.tls_handshake_failures = cast(Counter, made[specs.TLS_HANDSHAKE_FAILURES])
        self.tls_reloads = cast(Counter, made[specs.TLS_RELOADS])
        self.config_reloads = cast(Counter, made[specs.CONFIG_RELOADS])
        self.config_info = cast(Gauge, made[specs.CONFIG_INFO])
        self.events_written = cast(Counter, made[specs.EVENTS_WRITTEN])
        self.events_dropped = cast(Counter, made[specs.EVENTS_DROPPED])
        self.events_pending = cast(Gauge, made[specs.EVENTS_PENDING])
        self.cluster_reached = cast(Gauge, made[specs.CLUSTER_REACHED])
        self.active_cluster = cast(Gauge, made[specs.ACTIVE_CLUSTER])
        self.switchovers = cast(Counter, made[specs.SWITCHOVERS])
        self.switchover_fence = cast(Gauge, made[specs.SWITCHOVER_FENCE])
        self.switchover_connections = cast(Counter, made[specs.SWITCHOVER_CONNECTIONS])
        self.switchover_resume = cast(Histogram, made[specs.SWITCHOVER_RESUME])
        self.switchover_transactions = cast(Counter, made[specs.SWITCHOVER_TRANSACTIONS])
        self.switchover_unanswered = cast(Counter, made[specs.SWITCHOVER_UNANSWERED])
        self.quorum_leader = cast(Gauge, made[specs.QUORUM_LEADER])
        self.quorum_epoch = cast(Gauge, made[specs.QUORUM_EPOCH])
        self.quorum_leader_changes = cast(Counter, made[specs.QUORUM_LEADER_CHANGES])
        self.build_info = cast(Gauge, made[specs.BUILD_INFO])
        # The event loop is the one running: kproxy makes its metrics on it (app.serve).
        self.build_info.labels(__version__, hot_path_build(), event_loop_kind()).set(1)
        if runtime_collectors:
            # process_* (memory, CPU, open fds), python_info and python_gc_* (collections
            # per generation), as the default registry has.
            ProcessCollector(registry=reg)
            PlatformCollector(registry=reg)
            GCCollector(registry=reg)

    # -- the hot path (kproxy.observe.hot_metrics) ---------------------------------------
    def frame(self, api_key: int, direction: str, size: int) -> None:
        self.hot.frame(api_key, direction, size)

    def response(self, api_key: int, total_seconds: float, upstream_seconds: float) -> None:
        self.hot.response(api_key, total_seconds, upstream_seconds)

    # -- the rest ------------------------------------------------------------------------------
    def leader_change(self, source_api: int, topic: str) -> None:
        self.leader_changes.labels(api_name(source_api)).inc()
        if topic == METADATA_TOPIC:
            self.quorum_leader_changes.labels(api_name(source_api)).inc()
        if self.leader_changes_by_topic is not None:
            self.leader_changes_by_topic.labels(topic).inc()

    def redirect(self, api_key: int, from_node: int | None, to_node: int | None) -> None:
        if to_node is None:
            self.redirects_without_leader.labels(api_name(api_key)).inc()
        else:
            self.redirects.labels(api_name(api_key), node_label(from_node), str(to_node)).inc()

    def recovery(self, seconds: float, with_endpoint: bool) -> None:
        path = path_label(with_endpoint)
        self.recoveries.labels(path).inc()
        self.recovery_seconds.labels(path).observe(seconds)

    def endpoints(self, api_key: int, rewritten: int, removed: int) -> None:
        name = api_name(api_key)
        if rewritten:
            self.endpoint_rewrites.labels(name).inc(rewritten)
        if removed:
            self.endpoints_unmapped.labels(name).inc(removed)

    def connection_opened(self, listener: str) -> None:
        self.connections_opened.labels(listener).inc()
        self.connections_active.labels(listener).inc()

    def connection_closed(self, listener: str, cause: str, principal: str | None = None) -> None:
        self.connections_closed.labels(listener, cause).inc()
        self.connections_active.labels(listener).dec()
        closed = self.principal_connections_closed
        if closed is not None and principal is not None:
            closed.labels(self.principal_label(principal)).inc()

    def authenticated(self, labels: tuple[str, str, str], principal: str | None) -> None:
        """A SASL exchange ended: (listener, mechanism, outcome), and its principal."""
        self.authentications.labels(*labels).inc()
        self.audit_records.labels(labels[0], AUTHENTICATE, labels[2]).inc()
        counted = self.principal_authentications
        if counted is not None and principal is not None:
            counted.labels(self.principal_label(principal), labels[2]).inc()

    def principal_label(self, principal: str) -> str:
        """The principal itself while fewer than `principal_labels` have been labelled,
        or it is one of them; `other` after that: a principal is chosen by clients."""
        seen = self.labelled_principals
        if principal in seen:
            return principal
        if len(seen) < self.principal_labels:
            seen.add(principal)
            return principal
        return "other"

    def event_written(self, sink: str, event_type: str, count: int = 1) -> None:
        """Called by the event log's writer thread, or librdkafka's delivery reports
        (prometheus_client is thread-safe)."""
        self.events_written.labels(sink, event_type).inc(count)

    def event_dropped(self, sink: str, count: int) -> None:
        self.events_dropped.labels(sink).inc(count)

    def exposition(self, accept: str | None = None) -> tuple[bytes, str]:
        """(body, content type) of a scrape, in the format the Accept header asks for."""
        encode, content_type = choose_encoder(accept or "")
        return encode(self.registry), content_type

    def value(self, name: str, labels: dict[str, str] | None = None) -> float:
        """A sample's current value (0 when absent): for summaries and tests."""
        got = self.registry.get_sample_value(name, labels or {})
        return 0.0 if got is None else got

    def total(self, name: str) -> float:
        """The sum of a metric's samples over all label values."""
        total = 0.0
        for family in self.registry.collect():
            for sample in family.samples:
                if sample.name == name:
                    total += sample.value
        return total


def _make(spec: MetricSpec, registry: CollectorRegistry) -> Counter | Gauge | Histogram:
    """The prometheus_client family a spec describes."""
    if spec.kind == HISTOGRAM:
        return Histogram(spec.name, spec.help, spec.labels, registry=registry, buckets=spec.buckets)
    if spec.kind == GAUGE:
        return Gauge(spec.name, spec.help, spec.labels, registry=registry)
    return Counter(spec.name, spec.help, spec.labels, registry=registry)
