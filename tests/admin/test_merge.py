"""The supervisor's scrape (`kproxy.admin.merge`) from two workers' real expositions:
every count and held quantity summed, a fact every worker states alike stated once,
each series exposed once, in both exposition formats."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kproxy.admin.merge import MergedScrape, merge_expositions
from kproxy.observe.metrics import KproxyMetrics


def worker(frames: int, connections: int, reached: int, restart_pending: str) -> str:
    metrics = KproxyMetrics()
    for _ in range(frames):
        metrics.frame(0, "request", 100)
    metrics.connections_active.labels("bootstrap").set(connections)
    metrics.connections_opened.labels("bootstrap").inc(connections)
    metrics.recovery_seconds.labels("with_endpoint").observe(0.02)
    metrics.cluster_reached.set(reached)
    metrics.config_info.labels("abc", restart_pending).set(1)
    metrics.quorum_epoch.set(7 + frames)
    return generate_latest(metrics.registry).decode()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, f"{key} exposed twice"
            out[key] = s.value
    return out


def merged_text(texts: list[str], accept: str = "") -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(MergedScrape(merge_expositions(texts)))
    encode, _ = choose_encoder(accept)
    return encode(registry).decode()


def test_counts_and_held_quantities_sum_and_facts_are_stated_once() -> None:
    a, b = worker(3, 4, 1, "false"), worker(5, 2, 0, "true")
    merged = samples(merged_text([a, b]))
    one, two = samples(a), samples(b)

    def get(
        table: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
    ) -> float:
        return table[(name, tuple(sorted(labels.items())))]

    frames = {"api": "Produce", "direction": "request"}
    assert get(merged, "kproxy_frames_total", **frames) == 8
    assert get(merged, "kproxy_bytes_total", **frames) == 800
    assert get(merged, "kproxy_connections_active", listener="bootstrap") == 6
    assert get(merged, "kproxy_connections_opened_total", listener="bootstrap") == 6
    bucket = {"path": "with_endpoint", "le": "0.025"}
    assert get(merged, "kproxy_recovery_seconds_bucket", **bucket) == 2
    assert get(merged, "kproxy_recovery_seconds_count", path="with_endpoint") == 2
    # Stated alike by every worker: once, never doubled.
    assert get(merged, "kproxy_cluster_reached") == 0  # not every worker reached it
    assert get(merged, "kproxy_quorum_epoch") == 12
    # Each worker's own series survives, once.
    assert get(merged, "kproxy_config_info", hash="abc", restart_pending="false") == 1
    assert get(merged, "kproxy_config_info", hash="abc", restart_pending="true") == 1
    assert get(merged, "process_start_time_seconds") == min(
        get(one, "process_start_time_seconds"), get(two, "process_start_time_seconds")
    )
    assert get(merged, "python_info", **dict(next(k for k in one if k[0] == "python_info")[1])) == 1
    assert set(merged) == set(one) | set(two)


def test_one_worker_is_exposed_as_it_was_in_both_formats() -> None:
    text = worker(2, 1, 1, "false")
    assert samples(merged_text([text])) == samples(text)
    openmetrics = merged_text([text], "application/openmetrics-text; version=1.0.0")
    assert openmetrics.rstrip().endswith("# EOF")
    assert "kproxy_frames_total" in openmetrics
