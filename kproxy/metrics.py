"""Every metric kproxy exports: names, labels, buckets and help text, in one place.

Conventions (https://prometheus.io/docs/practices/naming/): a `kproxy_` prefix,
`_total` on counters, base units (`_seconds`, `_bytes`) in the name. Labels are
bounded: API names (about a hundred Kafka APIs), node ids (bounded by the cluster's
size), listener names (one per node), and small fixed sets of causes and reasons. No
client id and no partition ever becomes a label; a topic only does when the operator
asks for it (`metrics.topic_labels: true`), on one metric.

Each `KproxyMetrics` has its own `CollectorRegistry`, so tests can make several. Its
recording methods cache label children: per-request code does a dict lookup, not
prometheus_client's label validation, for every frame.
"""

from __future__ import annotations

from typing import NamedTuple, cast

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.exposition import choose_encoder

from kproxy import __version__
from kproxy.protocol.apis import api_name

# The `_created` series that prometheus_client adds beside every counter and histogram
# double the series count and nothing in kproxy's dashboards reads them (process start
# time is in process_start_time_seconds). The switch is process-wide; kproxy owns its
# process.
disable_created_metrics()  # type: ignore[no-untyped-call]

COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"

# Kafka request latencies: from sub-millisecond metadata calls to Fetch long polls
# (fetch.max.wait.ms, 500 ms by default) and acks=all produces under load.
LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0
)  # fmt: skip
# From a redirect to the client's first success: KIP-951 aims at milliseconds, a
# metadata refresh takes up to retry.backoff.ms plus a round trip, a stuck client minutes.
RECOVERY_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0
)  # fmt: skip

BOOTSTRAP_NODE = "bootstrap"  # the from_node of a response that came through bootstrap
WITH_ENDPOINT, WITHOUT_ENDPOINT = "with_endpoint", "without_endpoint"


class MetricSpec(NamedTuple):
    name: str  # as exposed (counters end in _total)
    kind: str
    labels: tuple[str, ...]
    help: str
    buckets: tuple[float, ...] = ()
    topic_labels_only: bool = False  # registered only with metrics.topic_labels: true


LEADER_CHANGES = MetricSpec(
    "kproxy_leader_changes_total",
    COUNTER,
    ("source_api",),
    "Partition leader moves (leader id or epoch moved to a newer state), each counted once, "
    "by the API of the response that showed it first.",
)
LEADER_CHANGES_BY_TOPIC = MetricSpec(
    "kproxy_leader_changes_by_topic_total",
    COUNTER,
    ("topic",),
    "Partition leader moves by topic (only with metrics.topic_labels: true).",
    topic_labels_only=True,
)
REDIRECTS = MetricSpec(
    "kproxy_redirects_total",
    COUNTER,
    ("api", "from_node", "to_node"),
    "Partition results with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH that named the new "
    "leader (KIP-951 CurrentLeader), by the node that answered and the node it named.",
)
REDIRECTS_WITHOUT_LEADER = MetricSpec(
    "kproxy_redirects_without_leader_total",
    COUNTER,
    ("api",),
    "Partition results with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH that named no new "
    "leader: the client must refresh its metadata.",
)
RECOVERIES = MetricSpec(
    "kproxy_recoveries_total",
    COUNTER,
    ("path",),
    "A client's first success on a partition after a redirect there, by whether the first "
    "redirect carried the new leader's endpoint (with_endpoint) or not (without_endpoint).",
)
RECOVERY_SECONDS = MetricSpec(
    "kproxy_recovery_seconds",
    HISTOGRAM,
    ("path",),
    "Time from a client's first redirect on a partition to its first success there.",
    RECOVERY_BUCKETS,
)
ENDPOINT_REWRITES = MetricSpec(
    "kproxy_endpoint_rewrites_total",
    COUNTER,
    ("api",),
    "Broker endpoints rewritten to kproxy addresses.",
)
ENDPOINTS_UNMAPPED = MetricSpec(
    "kproxy_endpoints_unmapped_total",
    COUNTER,
    ("api",),
    "Broker endpoints removed from messages because their node has no kproxy port.",
)
NODES_DISCOVERED = MetricSpec(
    "kproxy_nodes_discovered_total",
    COUNTER,
    (),
    "Broker nodes learned, or whose advertised address changed.",
)
API_VERSIONS_CLAMPED = MetricSpec(
    "kproxy_api_versions_clamped_total",
    COUNTER,
    (),
    "ApiVersions responses changed to offer only what kproxy can walk.",
)
REQUEST_DURATION = MetricSpec(
    "kproxy_request_duration_seconds",
    HISTOGRAM,
    ("api",),
    "Request latency as the client sees it: from kproxy reading the request to writing "
    "the response.",
    LATENCY_BUCKETS,
)
UPSTREAM_DURATION = MetricSpec(
    "kproxy_upstream_duration_seconds",
    HISTOGRAM,
    ("api",),
    "The part of the request latency spent waiting for the broker.",
    LATENCY_BUCKETS,
)
FRAMES = MetricSpec(
    "kproxy_frames_total",
    COUNTER,
    ("api", "direction"),
    "Kafka frames forwarded, by API and direction (request, response).",
)
BYTES = MetricSpec(
    "kproxy_bytes_total",
    COUNTER,
    ("api", "direction"),
    "Bytes of Kafka frames forwarded (without the 4-byte size prefix), by API and direction.",
)
CONNECTIONS_OPENED = MetricSpec(
    "kproxy_connections_opened_total",
    COUNTER,
    ("listener",),
    "Client connections accepted, by listener.",
)
CONNECTIONS_ACTIVE = MetricSpec(
    "kproxy_connections_active",
    GAUGE,
    ("listener",),
    "Client connections open now, by listener.",
)
CONNECTIONS_CLOSED = MetricSpec(
    "kproxy_connections_closed_total",
    COUNTER,
    ("listener", "cause"),
    "Client connections closed, by listener and cause.",
)
CONNECTIONS_REFUSED = MetricSpec(
    "kproxy_connections_refused_total",
    COUNTER,
    ("listener", "reason"),
    "Client connections accepted and closed at once: connection_limit, descriptor_limit, "
    "client_ip_limit, shutting_down.",
)
ACCEPT_ERRORS = MetricSpec(
    "kproxy_accept_errors_total",
    COUNTER,
    ("reason",),
    "Connections the kernel could not give kproxy (fd_exhausted: EMFILE or ENFILE).",
)
REQUESTS_HELD = MetricSpec(
    "kproxy_requests_held_total",
    COUNTER,
    ("listener",),
    "Requests a client pipelined past limits.max_in_flight_requests, held until responses "
    "freed a slot.",
)
FRAME_ERRORS = MetricSpec(
    "kproxy_frame_errors_total",
    COUNTER,
    ("side", "reason"),
    "Connections closed for a bad frame, by the side that sent it and the reason.",
)
UPSTREAM_CONNECT_FAILURES = MetricSpec(
    "kproxy_upstream_connect_failures_total",
    COUNTER,
    ("reason",),
    "Failed attempts to reach a broker.",
)
EVENTS_WRITTEN = MetricSpec(
    "kproxy_events_written_total",
    COUNTER,
    ("type",),
    "Event-log lines written, by event type.",
)
EVENTS_DROPPED = MetricSpec(
    "kproxy_events_dropped_total",
    COUNTER,
    (),
    "Events not written to the event log (queue full, or the file could not be written).",
)
CLUSTER_REACHED = MetricSpec(
    "kproxy_cluster_reached",
    GAUGE,
    (),
    "1 once kproxy has had an answer from the cluster, else 0.",
)
BUILD_INFO = MetricSpec(
    "kproxy_build_info",
    GAUGE,
    ("version",),
    "Always 1; the version label says which kproxy this is.",
)

# Every metric above, in the order declared: each is declared once, as a MetricSpec.
METRICS: tuple[MetricSpec, ...] = tuple(
    v for v in dict(globals()).values() if isinstance(v, MetricSpec)
)


def series_names(spec: MetricSpec) -> tuple[str, ...]:
    """The sample names a metric appears under in the text exposition."""
    if spec.kind == HISTOGRAM:
        return (f"{spec.name}_bucket", f"{spec.name}_sum", f"{spec.name}_count")
    return (spec.name,)


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
        registry: CollectorRegistry | None = None,
        runtime_collectors: bool = True,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.topic_labels = topic_labels
        reg = self.registry
        made = {
            spec: _make(spec, reg) for spec in METRICS if topic_labels or not spec.topic_labels_only
        }
        self.leader_changes = cast(Counter, made[LEADER_CHANGES])
        self.leader_changes_by_topic = cast("Counter | None", made.get(LEADER_CHANGES_BY_TOPIC))
        self.redirects = cast(Counter, made[REDIRECTS])
        self.redirects_without_leader = cast(Counter, made[REDIRECTS_WITHOUT_LEADER])
        self.recoveries = cast(Counter, made[RECOVERIES])
        self.recovery_seconds = cast(Histogram, made[RECOVERY_SECONDS])
        self.endpoint_rewrites = cast(Counter, made[ENDPOINT_REWRITES])
        self.endpoints_unmapped = cast(Counter, made[ENDPOINTS_UNMAPPED])
        self.nodes_discovered = cast(Counter, made[NODES_DISCOVERED])
        self.api_versions_clamped = cast(Counter, made[API_VERSIONS_CLAMPED])
        self.request_duration = cast(Histogram, made[REQUEST_DURATION])
        self.upstream_duration = cast(Histogram, made[UPSTREAM_DURATION])
        self.frames = cast(Counter, made[FRAMES])
        self.bytes = cast(Counter, made[BYTES])
        self.connections_opened = cast(Counter, made[CONNECTIONS_OPENED])
        self.connections_active = cast(Gauge, made[CONNECTIONS_ACTIVE])
        self.connections_closed = cast(Counter, made[CONNECTIONS_CLOSED])
        self.frame_errors = cast(Counter, made[FRAME_ERRORS])
        self.connections_refused = cast(Counter, made[CONNECTIONS_REFUSED])
        self.accept_errors = cast(Counter, made[ACCEPT_ERRORS])
        self.requests_held = cast(Counter, made[REQUESTS_HELD])
        self.upstream_connect_failures = cast(Counter, made[UPSTREAM_CONNECT_FAILURES])
        self.events_written = cast(Counter, made[EVENTS_WRITTEN])
        self.events_dropped = cast(Counter, made[EVENTS_DROPPED])
        self.cluster_reached = cast(Gauge, made[CLUSTER_REACHED])
        self.build_info = cast(Gauge, made[BUILD_INFO])
        self.build_info.labels(__version__).set(1)
        if runtime_collectors:
            # process_* (memory, CPU, open fds) and python_info, as the default registry has.
            ProcessCollector(registry=reg)
            PlatformCollector(registry=reg)
        # Label children, cached by the raw values the runtime passes.
        self._frame_children: dict[tuple[int, str], tuple[Counter, Counter]] = {}
        self._latency_children: dict[int, tuple[Histogram, Histogram]] = {}

    # -- the hot path ---------------------------------------------------------------------
    def frame(self, api_key: int, direction: str, size: int) -> None:
        children = self._frame_children.get((api_key, direction))
        if children is None:
            name = api_name(api_key)
            children = (
                self.frames.labels(name, direction),
                self.bytes.labels(name, direction),
            )
            self._frame_children[(api_key, direction)] = children
        children[0].inc()
        children[1].inc(size)

    def response(self, api_key: int, total_seconds: float, upstream_seconds: float) -> None:
        children = self._latency_children.get(api_key)
        if children is None:
            name = api_name(api_key)
            children = (
                self.request_duration.labels(name),
                self.upstream_duration.labels(name),
            )
            self._latency_children[api_key] = children
        children[0].observe(total_seconds)
        children[1].observe(upstream_seconds)

    # -- the rest ------------------------------------------------------------------------------
    def leader_change(self, source_api: int, topic: str) -> None:
        self.leader_changes.labels(api_name(source_api)).inc()
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

    def connection_closed(self, listener: str, cause: str) -> None:
        self.connections_closed.labels(listener, cause).inc()
        self.connections_active.labels(listener).dec()

    def event_written(self, event_type: str) -> None:
        """Called by the event log's writer thread (prometheus_client is thread-safe)."""
        self.events_written.labels(event_type).inc()

    def event_dropped(self, count: int) -> None:
        self.events_dropped.inc(count)

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
