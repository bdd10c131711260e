"""The metrics of cluster switchovers (`kproxy.runtime.switchover`), declared with the
others in `kproxy.observe.metric_specs`. Labels: cluster names (the configured few),
triggers (admin, reload, failover) and results (completed, or why refused)."""

from __future__ import annotations

from kproxy.observe.metric_kinds import COUNTER, GAUGE, HISTOGRAM, MetricSpec

ACTIVE_CLUSTER = MetricSpec(
    "kproxy_active_cluster",
    GAUGE,
    ("cluster",),
    "1 for the upstream cluster kproxy serves now, 0 for the other configured clusters.",
)
SWITCHOVERS = MetricSpec(
    "kproxy_switchovers_total",
    COUNTER,
    ("trigger", "result"),
    "Switchovers by trigger (admin, reload, failover) and result: completed, or refused "
    "(unknown, active, in_progress, unreachable, tls), nothing changed.",
)
SWITCHOVER_FENCE = MetricSpec(
    "kproxy_switchover_fence_seconds",
    GAUGE,
    (),
    "How long the last switchover's fence lasted: from closing to new requests until "
    "every fenced connection was closed (switchover.fence_seconds at most).",
)
SWITCHOVER_CONNECTIONS = MetricSpec(
    "kproxy_switchover_connections_total",
    COUNTER,
    ("how",),
    "Connections switchovers moved: drained (closed between responses), cut (still "
    "awaiting an answer when the fence ended), held (new ones that waited for the fence).",
)
SWITCHOVER_RESUME = MetricSpec(
    "kproxy_switchover_resume_seconds",
    HISTOGRAM,
    ("api",),
    "Per client, from a switchover's fence to its first Produce or Fetch (api) answered "
    "without error on the target: how long the switchover left it without service.",
    (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0),
)
SWITCHOVER_TRANSACTIONS = MetricSpec(
    "kproxy_switchover_transactions_total",
    COUNTER,
    ("result",),
    "Transactional ids of fenced producers that switchovers fenced on the cluster they "
    "left, any open transaction aborted (result aborted), or could not (not_aborted: "
    "left to the cluster's transaction.timeout.ms).",
)
SWITCHOVER_UNANSWERED = MetricSpec(
    "kproxy_switchover_requests_unanswered_total",
    COUNTER,
    (),
    "Requests the connections cut at a switchover's fence had read and not answered "
    "(in flight, or waiting for a slot): their clients send them again to the target.",
)
