"""kproxy's metrics: names and labels follow Prometheus conventions, promtool agrees."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from prometheus_client import generate_latest

from kproxy.observe.metrics import (
    COUNTER,
    GAUGE,
    HISTOGRAM,
    METRICS,
    KproxyMetrics,
    MetricSpec,
    series_names,
)
from kproxy.observe.supervisor_specs import SUPERVISOR_METRICS
from kproxy.session.quota import QuotaBook, QuotaRule

NAME_RE = re.compile(r"^kproxy_[a-z][a-z0-9_]*[a-z0-9]$")
# Unbounded: never a label (a topic only behind metrics.topic_labels).
FORBIDDEN_LABELS = {"client_id", "client", "partition", "topic", "address", "host", "port"}
UNIT_SUFFIXES = ("_seconds", "_bytes")


def exercised(topic_labels: bool = True) -> KproxyMetrics:
    """Metrics with at least one sample in every labelled family."""
    m = KproxyMetrics(topic_labels=topic_labels, principal_labels=2 if topic_labels else 0)
    m.frame(0, "request", 1000)
    m.frame(0, "response", 100)
    m.frame(1, "response", 1 << 20)
    m.response(0, 0.004, 0.003)
    m.response(3, 0.0002, 0.0001)
    m.leader_change(0, "orders")
    m.leader_change(53, "__cluster_metadata")  # a KRaft quorum move (BeginQuorumEpoch)
    m.redirect(0, 1, 2)
    m.redirect(1, None, 3)
    m.redirect(1, 1, None)
    m.recovery(0.0075, True)
    m.recovery(1.5, False)
    m.endpoints(3, 3, 1)
    m.connection_opened("bootstrap")
    m.connection_opened("node-1")
    m.connection_closed("node-1", "client_closed")
    m.frame_errors.labels("client", "frame_too_large").inc()
    m.connections_refused.labels("bootstrap", "connection_limit").inc()
    m.accept_errors.labels("fd_exhausted").inc()
    m.listener_bind_failures.labels("node-1").inc()
    m.proxy_header_errors.labels("untrusted").inc()
    m.requests_held.labels("bootstrap").inc(3)
    m.requests_refused.labels("CreateTopics", "bootstrap").inc()
    m.authenticated(("bootstrap", "PLAIN", "success"), "User:alice")
    m.connection_opened("node-2")
    m.connection_closed("node-2", "idle_timeout", "User:alice")
    m.config_values_redacted.labels("DescribeConfigs").inc(2)
    m.responses_trimmed.labels("Metadata").inc()
    m.hot.response_streamed(1, "padded")
    m.quotas.book = QuotaBook([QuotaRule("default", None, None, (1e6, 2e6, 100.0))], 1.0, 11)
    m.upstream_connect_failures.labels("refused").inc()
    m.tls_handshake_failures.labels("client", "not_tls").inc()
    m.tls_reloads.labels("success").inc()
    m.config_reloads.labels("applied").inc()
    m.config_info.labels("0123456789ab", "false").set(1)
    m.event_written("file", "redirect")
    m.event_dropped("file", 2)
    m.nodes_discovered.inc()
    m.api_versions_clamped.inc()
    m.tenant_requests.labels("team-a", "Produce").inc()
    m.cluster_reached.set(1)
    m.active_cluster.labels("a").set(1)
    m.switchovers.labels("admin", "completed").inc()
    m.switchover_fence.set(0.25)
    m.switchover_connections.labels("drained").inc()
    m.switchover_resume.labels("Produce").observe(1.5)
    m.switchover_transactions.labels("aborted").inc()
    m.switchover_unanswered.inc(2)
    return m


@pytest.mark.parametrize(
    "spec", METRICS + SUPERVISOR_METRICS, ids=[s.name for s in METRICS + SUPERVISOR_METRICS]
)
def test_names_and_labels_follow_the_conventions(spec: MetricSpec) -> None:
    assert NAME_RE.match(spec.name), spec.name
    assert "__" not in spec.name
    if spec.kind == COUNTER:
        assert spec.name.endswith("_total")
    else:
        assert spec.kind in (GAUGE, HISTOGRAM)
        assert not spec.name.endswith("_total")
    if spec.kind == HISTOGRAM:
        assert spec.name.endswith(UNIT_SUFFIXES), "histograms are in base units"
        assert list(spec.buckets) == sorted(spec.buckets) and spec.buckets
    assert spec.help.strip()
    labels = set(spec.labels)
    if spec.topic_labels_only:
        labels -= {"topic"}
    if spec.principal_labels_only:
        labels -= {"principal"}
    assert not labels & FORBIDDEN_LABELS, spec.name
    for label in spec.labels:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", label) and not label.startswith("__")


def test_names_are_unique_and_the_registry_holds_exactly_them() -> None:
    names = [s.name for s in METRICS]
    assert len(names) == len(set(names))
    m = exercised()
    exposed = {
        sample.name
        for family in m.registry.collect()
        if family.name.startswith("kproxy_")
        for sample in family.samples
    }
    expected = {n for s in METRICS for n in series_names(s)}
    assert exposed == expected


def test_no_created_series_and_runtime_metrics_are_there() -> None:
    text = exercised().exposition()[0].decode()
    assert "_created" not in text
    assert "process_resident_memory_bytes" in text or "process_" not in text  # Linux only
    assert 'python_gc_collections_total{generation="0"}' in text
    assert re.search(r'kproxy_build_info\{event_loop="\w+",hot_path="\w+",version="', text)


def test_topic_label_only_when_asked_for() -> None:
    off = exercised(topic_labels=False)
    assert off.leader_changes_by_topic is None
    assert b"kproxy_leader_changes_by_topic_total" not in off.exposition()[0]
    on = exercised(topic_labels=True)
    assert on.value("kproxy_leader_changes_by_topic_total", {"topic": "orders"}) == 1


def test_labels_carry_api_names_and_node_ids() -> None:
    m = exercised()
    assert m.value("kproxy_frames_total", {"api": "Produce", "direction": "request"}) == 1
    assert m.value("kproxy_bytes_total", {"api": "Fetch", "direction": "response"}) == 1 << 20
    assert m.value("kproxy_leader_changes_total", {"source_api": "Produce"}) == 1
    assert (
        m.value("kproxy_redirects_total", {"api": "Produce", "from_node": "1", "to_node": "2"}) == 1
    )
    assert (
        m.value(
            "kproxy_redirects_total", {"api": "Fetch", "from_node": "bootstrap", "to_node": "3"}
        )
        == 1
    )
    assert m.value("kproxy_redirects_without_leader_total", {"api": "Fetch"}) == 1
    assert m.value("kproxy_recoveries_total", {"path": "with_endpoint"}) == 1
    assert m.value("kproxy_recovery_seconds_sum", {"path": "without_endpoint"}) == 1.5
    assert m.value("kproxy_endpoint_rewrites_total", {"api": "Metadata"}) == 3
    assert m.value("kproxy_endpoints_unmapped_total", {"api": "Metadata"}) == 1
    assert m.value("kproxy_connections_active", {"listener": "node-1"}) == 0
    assert m.value("kproxy_connections_active", {"listener": "bootstrap"}) == 1
    assert (
        m.value("kproxy_connections_closed_total", {"listener": "node-1", "cause": "client_closed"})
        == 1
    )
    assert m.value("kproxy_request_duration_seconds_count", {"api": "Produce"}) == 1
    assert m.value("kproxy_upstream_duration_seconds_sum", {"api": "Produce"}) == 0.003
    assert m.value("kproxy_events_dropped_total", {"sink": "file"}) == 2
    assert m.total("kproxy_redirects_total") == 2


def test_instances_are_independent() -> None:
    a, b = KproxyMetrics(), KproxyMetrics()
    a.nodes_discovered.inc()
    assert a.value("kproxy_nodes_discovered_total") == 1
    assert b.value("kproxy_nodes_discovered_total") == 0


def test_openmetrics_when_prometheus_asks_for_it() -> None:
    m = exercised()
    body, content_type = m.exposition("application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
    assert content_type.startswith("application/openmetrics-text")
    assert body.rstrip().endswith(b"# EOF")
    body, content_type = m.exposition(None)
    assert content_type.startswith("text/plain")


@pytest.mark.parametrize("topic_labels", [False, True])
def test_promtool_check_metrics(topic_labels: bool) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    body, _ = exercised(topic_labels).exposition()
    proc = subprocess.run(
        [promtool, "check", "metrics"], input=body, capture_output=True, timeout=60, check=False
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()
    assert not proc.stdout.strip() and not proc.stderr.strip(), (proc.stdout + proc.stderr).decode()


def test_principal_labels_are_opt_in_and_bounded() -> None:
    """`metrics.principal_labels: N`: the first N principals are labels, later ones
    `other`; without it no principal ever becomes a label."""
    m = KproxyMetrics(principal_labels=2)
    for who in ("User:alice", "User:bob", "User:mallory", "User:alice", "User:eve"):
        m.authenticated(("bootstrap", "PLAIN", "success"), who)
        m.connection_closed("bootstrap", "client_closed", who)
    text = generate_latest(m.registry).decode()
    for family in (
        "kproxy_principal_authentications_total",
        "kproxy_principal_connections_closed_total",
    ):
        labels = set(re.findall("^" + family + r'\{.*principal="([^"]+)"', text, re.M))
        assert labels == {"User:alice", "User:bob", "other"}, (family, labels)
    assert 'kproxy_principal_connections_closed_total{principal="other"} 2.0' in text
    off = generate_latest(KproxyMetrics().registry).decode()
    assert "principal" not in off
