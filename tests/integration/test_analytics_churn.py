"""`kproxy analyze` on the event log a real kproxy wrote during a leader-churn run.

A confluent-kafka producer and consumer (librdkafka: Produce v10 and Fetch v16, the
KIP-951 fast path) run through kproxy in front of librdkafka's mock cluster while the
test moves partition leaders (docs/peers.md §1). Then `kproxy analyze` runs on the event
directory on real local Spark (docs/peers.md §4), and its figures (summary.json and the
Parquet tables, read back with pyarrow) must equal what plain Python counts in the
same event files, and what kproxy's own /metrics counters said before it stopped.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("matplotlib")
pq = pytest.importorskip("pyarrow.parquet")

from tests.analyze_command import run_analyze  # noqa: E402
from tests.churn_traffic import churn_traffic, read_event_files, topology_leaders  # noqa: E402
from tests.exposition import metrics_sum, parse_exposition  # noqa: E402
from tests.kproxy_process import KproxyProcess  # noqa: E402
from tests.peers.mock_cluster import MockCluster  # noqa: E402
from tests.peers.net import wait_until  # noqa: E402

pytestmark = [pytest.mark.peers, pytest.mark.slow]

TOPIC = "churned"
PARTITIONS = 6
BROKERS = [1, 2, 3]
ROUNDS = 12  # rounds of moves, one per partition each, 250 ms apart


def percentile(values: list[float], p: float) -> float:
    """Exact, linear between the nearest ranks: what the report says it computes."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


@pytest.fixture
def churned(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """Runs the churn; yields the event directory and kproxy's last /metrics text."""

    with MockCluster(brokers=3) as mc:
        mc.create_topic(TOPIC, PARTITIONS, 3)
        (tmp_path / "kproxy").mkdir()
        kp = KproxyProcess(
            tmp_path / "kproxy", mc.bootstraps.split(","), events={"request_sample_rate": 0.2}
        )
        with kp:
            with churn_traffic(kp.bootstrap, TOPIC, PARTITIONS, "churn"):
                rng = random.Random(11)
                final: dict[int, tuple[int, int]] = {}
                for r in range(1, ROUNDS + 1):
                    for p in range(PARTITIONS):
                        leader = rng.choice(BROKERS)
                        mc.set_leader(TOPIC, p, leader)
                        final[p] = (leader, r)  # each move bumps the epoch by one
                    time.sleep(0.25)  # the churn's own pace, not a wait for readiness
                wait_until(
                    lambda: topology_leaders(kp, TOPIC) == final,
                    60,
                    what="kproxy to see the last moves",
                    interval=0.2,
                )

            def all_closed() -> bool:
                metrics = parse_exposition(kp.metrics_text())
                return metrics_sum(metrics, "kproxy_connections_active") == 0

            wait_until(all_closed, 30, what="the clients' connections to close")
            metrics_text = kp.metrics_text()
        # kproxy has stopped: its event log is flushed and closed.
        yield kp.tmp / "events", metrics_text


def parquet(out: Path, name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(out / "tables" / name).to_pylist()
    return rows


def test_analyze_agrees_with_the_event_files_and_the_metrics(
    churned: tuple[Path, str], tmp_path: Path
) -> None:
    events_dir, metrics_text = churned
    out = tmp_path / "analysis"
    result, summary = run_analyze([str(events_dir)], out, timeout=300)
    print(result.stdout)  # the run's summary, for the log (pytest -rP)
    assert (out / "report.html").is_file()
    assert result.stdout.startswith(f"kproxy analyze: {summary['events']:,} events from 1 proxy")
    assert "[8/8] report" in result.stderr  # progress goes to stderr

    # -- plain Python over the same files ---------------------------------------------------------
    events = read_event_files(events_dir)
    by_type = Counter(e["type"] for e in events)
    metrics = parse_exposition(metrics_text)
    assert metrics_sum(metrics, "kproxy_events_dropped_total") == 0
    assert summary["events"] == len(events) and summary["rejected"]["total"] == 0
    assert summary["event_counts"] == {t: by_type.get(t, 0) for t in summary["event_counts"]}

    # Leader changes: one proxy logs each move once, so moves == events; who gained and
    # who lost leadership, move by move.
    changes = [e for e in events if e["type"] == "leader_change"]
    assert changes, "the churn produced no leader changes"
    assert len(changes) == metrics_sum(metrics, "kproxy_leader_changes_total")
    assert summary["leader_changes"]["events"] == len(changes)
    distinct = {(e["topic"], e["partition"], e["new_epoch"], e["new_leader"]) for e in changes}
    assert summary["leader_changes"]["moves"] == len(distinct) == len(changes)
    gained = Counter(e["new_leader"] for e in changes)
    lost = Counter(e["old_leader"] for e in changes if e["old_leader"] != e["new_leader"])
    assert summary["leader_changes"]["brokers"] == {
        str(b): {"gained": gained[b], "lost": lost[b]} for b in sorted(set(gained) | set(lost))
    }
    by_topic = parquet(out, "leader_changes_by_topic")
    assert by_topic == [
        {"topic": TOPIC, "moves": len(changes), "events": len(changes), "partitions": PARTITIONS}
    ]

    # Redirects: by API and path, by route, and the metrics' own counters.
    redirects = [e for e in events if e["type"] == "redirect"]
    assert redirects, "the churn produced no redirects"

    def path(e: dict[str, Any]) -> str:
        if e["to_node"] is None:
            return "no_leader"
        return "fast_path" if e["with_endpoint"] else "leader_only"

    counted = Counter((e["api"], path(e)) for e in redirects)
    apis = sorted({e["api"] for e in redirects})
    expected_by_api = {
        api: {
            "redirects": sum(n for (a, _), n in counted.items() if a == api),
            **{p: counted[(api, p)] for p in ("fast_path", "leader_only", "no_leader")},
        }
        for api in apis
    }
    got_by_api = {
        r["api"]: {k: r[k] for k in ("redirects", "fast_path", "leader_only", "no_leader")}
        for r in parquet(out, "redirects_by_api")
    }
    assert got_by_api == expected_by_api
    for api in apis:
        with_leader = sum(
            v
            for (name, labels), v in metrics.items()
            if name == "kproxy_redirects_total" and dict(labels)["api"] == api
        )
        assert with_leader == counted[(api, "fast_path")] + counted[(api, "leader_only")]
        no_leader = metrics.get(("kproxy_redirects_without_leader_total", (("api", api),)), 0)
        assert no_leader == counted[(api, "no_leader")]
    routes = Counter((e["from_node"], e["to_node"]) for e in redirects)
    with_endpoint = Counter((e["from_node"], e["to_node"]) for e in redirects if e["with_endpoint"])
    assert {
        (r["from_node"], r["to_node"]): (r["redirects"], r["with_endpoint"])
        for r in parquet(out, "redirects_by_route")
    } == {route: (n, with_endpoint[route]) for route, n in routes.items()}
    fast = sum(1 for e in redirects if path(e) == "fast_path")
    assert fast > 0, "librdkafka's Produce v10 / Fetch v16 should take the KIP-951 path"
    assert summary["redirects"]["total"] == len(redirects)
    assert summary["redirects"]["fast_path"] == fast
    assert summary["redirects"]["endpoint_share"] == pytest.approx(fast / len(redirects))

    # Recoveries: count per path (and the metrics'), exact percentiles.
    recoveries = [e for e in events if e["type"] == "recovery"]
    assert recoveries, "no client recovered after a redirect"
    assert summary["recovery"]["all"]["recoveries"] == len(recoveries)
    assert metrics_sum(metrics, "kproxy_recoveries_total") == len(recoveries)
    all_ms = [float(e["ms"]) for e in recoveries]
    for p in ("p50", "p90", "p99"):
        q = {"p50": 0.5, "p90": 0.9, "p99": 0.99}[p]
        assert summary["recovery"]["all"][p] == pytest.approx(percentile(all_ms, q))
    for key, flag in (("with_endpoint", True), ("without_endpoint", False)):
        ms = [float(e["ms"]) for e in recoveries if e["with_endpoint"] is flag]
        counted_path = metrics.get(("kproxy_recoveries_total", (("path", key),)), 0)
        assert counted_path == len(ms)
        stats = summary["recovery"][key]
        if not ms:
            assert stats is None
            continue
        assert stats["recoveries"] == len(ms)
        assert stats["p99"] == pytest.approx(percentile(ms, 0.99))
    clients = {
        r["key"]: r["recoveries"]
        for r in parquet(out, "recovery_percentiles")
        if r["scope"] == "client"
    }
    assert clients == Counter(e["client_id"] for e in recoveries)
