"""What a metric declaration is (`kproxy.observe.metric_specs` holds every one)."""

from __future__ import annotations

from typing import NamedTuple

COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"


class MetricSpec(NamedTuple):
    name: str  # as exposed (counters end in _total)
    kind: str
    labels: tuple[str, ...]
    help: str
    buckets: tuple[float, ...] = ()
    topic_labels_only: bool = False  # registered only with metrics.topic_labels: true
    principal_labels_only: bool = False  # registered only with metrics.principal_labels: N
