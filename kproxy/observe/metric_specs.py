"""Every metric kproxy exports, declared once: name, kind, labels, help, buckets.

Conventions (https://prometheus.io/docs/practices/naming/): a `kproxy_` prefix,
`_total` on counters, base units (`_seconds`, `_bytes`) in the name. Labels are
bounded: no client id and no partition ever becomes a label; a topic only does when
the operator asks for it (`metrics.topic_labels: true`), on one metric; a principal
only when asked for (`metrics.principal_labels: N`), on two, and then at most N of them.
"""

from __future__ import annotations

from kproxy.observe.metric_kinds import COUNTER, GAUGE, HISTOGRAM, MetricSpec
from kproxy.observe.switchover_specs import (
    ACTIVE_CLUSTER,
    SWITCHOVER_CONNECTIONS,
    SWITCHOVER_FENCE,
    SWITCHOVER_RESUME,
    SWITCHOVER_TRANSACTIONS,
    SWITCHOVER_UNANSWERED,
    SWITCHOVERS,
)

__all__ = ["ACTIVE_CLUSTER", "COUNTER", "GAUGE", "HISTOGRAM", "SWITCHOVERS",
           "SWITCHOVER_CONNECTIONS", "SWITCHOVER_FENCE", "SWITCHOVER_RESUME",
           "SWITCHOVER_TRANSACTIONS", "SWITCHOVER_UNANSWERED", "MetricSpec"]  # fmt: skip

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
CONFIG_VALUES_REDACTED = MetricSpec(
    "kproxy_config_values_redacted_total",
    COUNTER,
    ("api",),
    "Configuration values that named broker or controller addresses (listeners, "
    "advertised.listeners, controller.quorum.voters...), withheld from clients.",
)
RESPONSES_TRIMMED = MetricSpec(
    "kproxy_responses_trimmed_total",
    COUNTER,
    ("api",),
    "Broker responses with bytes after their message (librdkafka's mock cluster sends one "
    "after every Metadata v13 response). Those bytes belong to no field, so no rewrite "
    "reaches them: they are cut, or covered when the frame size already went out "
    "(a streamed response), never passed on.",
)
RESPONSES_STREAMED = MetricSpec(
    "kproxy_responses_streamed_total",
    COUNTER,
    ("api", "tail"),
    "Responses forwarded while they arrived (limits.stream_responses_after_bytes), by what "
    "their tail became: none (no endpoints), rewritten, padded (rewritten shorter, padded "
    "with an ignored tagged field) or dropped (rewritten longer: its endpoints left out, "
    "the client refreshes its metadata).",
)
QUOTA_THROTTLE = MetricSpec(
    "kproxy_quota_throttle_seconds_total",
    COUNTER,
    ("quota", "kind"),
    "Throttle time given to clients over a quota (quotas.entries, by its name) for the rate "
    "of kind produce, fetch or requests: the throttle_time_ms their responses carried and "
    "the time kproxy left their connections unread (KIP-13, KIP-219).",
)
QUOTA_BYTES = MetricSpec(
    "kproxy_quota_bytes_total",
    COUNTER,
    ("quota", "kind"),
    "Bytes of Produce requests (kind produce) and Fetch responses (kind fetch) of the "
    "clients under a quota.",
)
QUOTA_REQUESTS = MetricSpec(
    "kproxy_quota_requests_total",
    COUNTER,
    ("quota",),
    "Requests of the clients under a quota.",
)
QUOTA_LIMIT = MetricSpec(
    "kproxy_quota_limit",
    GAUGE,
    ("quota", "kind"),
    "The quota in force, per second (bytes for produce and fetch, requests for requests).",
)
REQUESTS_REFUSED = MetricSpec(
    "kproxy_requests_refused_total",
    COUNTER,
    ("api", "listener"),
    "Requests refused by listeners.api_policy or listeners.authorization, by API and "
    "listener (bootstrap, node-N): "
    "answered with the authorization error a broker would send, or the connection closed "
    "where the API has no response (acks=0 Produce).",
)
AUTHENTICATIONS = MetricSpec(
    "kproxy_authentications_total",
    COUNTER,
    ("listener", "mechanism", "outcome"),
    "Clients' SASL exchanges that ended, by listener, mechanism (PLAIN, SCRAM-SHA-256, "
    "SCRAM-SHA-512, OAUTHBEARER, GSSAPI or other) and outcome (success, failure), as the "
    "broker answered them; re-authentications (KIP-368) included.",
)
AUDIT_RECORDS = MetricSpec(
    "kproxy_audit_records_total",
    COUNTER,
    ("listener", "action", "outcome"),
    "The audit trail's records (docs/security.md), one per `audit` event: by listener, "
    "action (authenticate, change, refuse) and outcome (success, failure, partial, "
    "refused).",
)
TENANT_REQUESTS = MetricSpec(
    "kproxy_tenant_requests_total",
    COUNTER,
    ("tenant", "api"),
    "Requests of a tenant's connections forwarded to the cluster (listeners.tenancy), by "
    "tenant and API; tenants are the configured ones, so the labels stay bounded.",
)
PRINCIPAL_AUTHENTICATIONS = MetricSpec(
    "kproxy_principal_authentications_total",
    COUNTER,
    ("principal", "outcome"),
    "Clients' SASL exchanges that ended, by principal (the name claimed, for a failure) "
    "and outcome; only with metrics.principal_labels: N, the first N principals seen "
    "labelled, every later one counted as `other`.",
    principal_labels_only=True,
)
PRINCIPAL_CONNECTIONS_CLOSED = MetricSpec(
    "kproxy_principal_connections_closed_total",
    COUNTER,
    ("principal",),
    "Client connections closed, by the principal they had last (User:ANONYMOUS when "
    "nothing named one); only with metrics.principal_labels: N, as above.",
    principal_labels_only=True,
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
LISTENER_BIND_FAILURES = MetricSpec(
    "kproxy_listener_bind_failures_total",
    COUNTER,
    ("listener",),
    "Attempts to open a node's listener that failed (its port taken, say); kproxy retries "
    "with backoff, and /readyz fails while one is not open.",
)
PROXY_HEADER_ERRORS = MetricSpec(
    "kproxy_proxy_protocol_errors_total",
    COUNTER,
    ("reason",),
    "Client connections closed for their PROXY protocol header: missing where required, "
    "from outside trusted_networks, malformed, or truncated by the client.",
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
TLS_HANDSHAKE_FAILURES = MetricSpec(
    "kproxy_tls_handshake_failures_total",
    COUNTER,
    ("side", "reason"),
    "Failed TLS handshakes, with clients (side client) or brokers (side upstream), by "
    "reason: not_tls, no_certificate, untrusted_certificate, certificate_expired, "
    "certificate_not_yet_valid, hostname_mismatch (kproxy refused the peer's certificate), "
    "refused_by_peer (the peer refused kproxy's), unknown_server_name (SNI: no such "
    "bootstrap or node name), protocol_version, timeout, closed, other.",
)
TLS_RELOADS = MetricSpec(
    "kproxy_tls_reloads_total",
    COUNTER,
    ("result",),
    "Loads of the listeners' TLS certificates after start (SIGHUP or a changed file), by "
    "result: success, or failure (the running certificates stay).",
)
CONFIG_RELOADS = MetricSpec(
    "kproxy_config_reloads_total",
    COUNTER,
    ("result",),
    "Configuration reloads (SIGHUP), by result: applied, unchanged, restart_needed (the "
    "live keys applied, the others wait for a restart) or rejected (invalid: nothing "
    "changed).",
)
CONFIG_INFO = MetricSpec(
    "kproxy_config_info",
    GAUGE,
    ("hash", "restart_pending"),
    "Always 1: the running configuration's fingerprint (secrets redacted) and whether the "
    "file holds changes that wait for a restart.",
)
EVENTS_WRITTEN = MetricSpec(
    "kproxy_events_written_total",
    COUNTER,
    ("sink", "type"),
    "Events written (file sink) or delivered (kafka sink), by sink and event type.",
)
EVENTS_DROPPED = MetricSpec(
    "kproxy_events_dropped_total",
    COUNTER,
    ("sink",),
    "Events a sink never got or could not write: the event queue or librdkafka's buffer "
    "full, a file not writable, an event not delivered in time.",
)
EVENTS_PENDING = MetricSpec(
    "kproxy_events_pending",
    GAUGE,
    (),
    "Events emitted and not yet handed to the sinks (the queue the writer drains five "
    "times a second, and the batch it is writing). Near 0 normally; near "
    "events.queue_size, new events are being dropped.",
)
CLUSTER_REACHED = MetricSpec(
    "kproxy_cluster_reached",
    GAUGE,
    (),
    "1 once kproxy has had an answer from the cluster, else 0.",
)
QUORUM_LEADER = MetricSpec(
    "kproxy_quorum_leader",
    GAUGE,
    (),
    "The KRaft quorum's leader (a controller id) as kproxy last saw it pass in Vote, "
    "BeginQuorumEpoch, EndQuorumEpoch or a Fetch of the metadata log (KIP-853); -1 until seen.",
)
QUORUM_EPOCH = MetricSpec(
    "kproxy_quorum_epoch",
    GAUGE,
    (),
    "The KRaft quorum's leader epoch as kproxy last saw it; -1 until seen.",
)
QUORUM_LEADER_CHANGES = MetricSpec(
    "kproxy_quorum_leader_changes_total",
    COUNTER,
    ("source_api",),
    "KRaft quorum leader moves (a newer epoch), each counted once, by the API of the "
    "response that showed it first.",
)
BUILD_INFO = MetricSpec(
    "kproxy_build_info",
    GAUGE,
    ("version", "hot_path", "event_loop"),
    "Always 1; which kproxy this is: its version, its hot path (compiled by mypyc, "
    "python, or mixed: a broken build) and its event loop (uvloop or asyncio).",
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
