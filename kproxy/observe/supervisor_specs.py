"""The supervisor's own metrics under `runtime.workers`, served beside the workers'
merged scrape (kproxy.admin.fleet); a single kproxy has neither."""

from __future__ import annotations

from kproxy.observe.metric_specs import COUNTER, GAUGE, MetricSpec

WORKERS = MetricSpec("kproxy_workers", GAUGE, (), "Worker processes serving clients now.")
WORKER_RESTARTS = MetricSpec(
    "kproxy_worker_restarts_total",
    COUNTER,
    (),
    "Workers the supervisor started again after one exited on its own.",
)
SUPERVISOR_METRICS = (WORKERS, WORKER_RESTARTS)
