"""What kproxy reports about leadership agrees with what the test did to the cluster.

A real Prometheus server scrapes kproxy during a mock-cluster leader-churn run. The test
records every `partition_set_leader` move (the mock bumps the partition's leader epoch
by one per move) and checks, through Prometheus's own HTTP API, the event log and
`/topology`, that kproxy saw moves that happened, each at most once, and nothing else.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.churn_traffic import churn_traffic, read_event_files, topology_leaders
from tests.exposition import metrics_sum, parse_exposition
from tests.kproxy_process import KproxyProcess
from tests.peers.mock_cluster import MockCluster
from tests.peers.net import wait_until
from tests.peers.prometheus import Prometheus

pytestmark = pytest.mark.peers

TOPIC = "observed"
PARTITIONS = 6
BROKERS = [1, 2, 3]


class Moves:
    """Every leader move the test made: partition -> [(leader, epoch after, time)]."""

    def __init__(self) -> None:
        self.by_partition: dict[int, list[tuple[int, int, float]]] = {
            p: [] for p in range(PARTITIONS)
        }
        self.lock = threading.Lock()

    def record(self, partition: int, leader: int, before: float) -> None:
        """`before`: the time just before the move was made (it happens after that)."""
        with self.lock:
            moves = self.by_partition[partition]
            moves.append((leader, len(moves) + 1, before))

    def final_states(self) -> dict[int, tuple[int, int]]:
        """Partition -> (leader, epoch) after the last move (each move bumps the epoch)."""
        return {p: (m[-1][0], m[-1][1]) for p, m in self.by_partition.items() if m}

    def total(self) -> int:
        return sum(len(m) for m in self.by_partition.values())


@pytest.fixture
def run(tmp_path: Path) -> Iterator[tuple[MockCluster, KproxyProcess, Prometheus]]:
    with MockCluster(brokers=3) as mc:
        mc.create_topic(TOPIC, PARTITIONS, 3)
        (tmp_path / "kproxy").mkdir()
        kp = KproxyProcess(
            tmp_path / "kproxy", mc.bootstraps.split(","), events={"request_sample_rate": 0.2}
        )
        with kp:
            (tmp_path / "prom").mkdir()
            with Prometheus(tmp_path / "prom", [f"127.0.0.1:{kp.admin_port}"]) as prom:
                yield mc, kp, prom


def test_metrics_events_and_topology_agree_with_the_churn(
    run: tuple[MockCluster, KproxyProcess, Prometheus],
) -> None:

    mc, kp, prom = run
    moves = Moves()
    with churn_traffic(kp.bootstrap, TOPIC, PARTITIONS, "observed"):
        rng = random.Random(4)
        churn_started = time.time()
        for _ in range(25):  # 25 rounds, 200 ms apart
            for p in range(PARTITIONS):
                leader = rng.choice(BROKERS)
                before = time.time()
                mc.set_leader(TOPIC, p, leader)
                moves.record(p, leader, before)
            time.sleep(0.2)  # the churn's own pace, not a wait for readiness
        final = moves.final_states()
        # After the last move /topology converges on the mock cluster's final leaders and
        # epochs (a last move may keep the leader and only bump the epoch).
        wait_until(
            lambda: topology_leaders(kp, TOPIC) == final,
            60,
            what="/topology to show the final leaders",
            interval=0.2,
        )

    def all_closed() -> bool:
        active = metrics_sum(parse_exposition(kp.metrics_text()), "kproxy_connections_active")
        return active == 0

    wait_until(all_closed, 30, what="the clients' connections to close")
    prom.wait_for_scrape_after(time.time())

    # Prometheus's view (through its own HTTP API) equals kproxy's exposition now. Polled:
    # a query right after the targets API reported that scrape once found no leader change.
    Queried = dict[tuple[tuple[str, str], ...], float]

    def prometheus_agrees() -> tuple[Queried, Queried] | None:
        exposed = parse_exposition(kp.metrics_text())
        changes = prom.query("kproxy_leader_changes_total")
        redirects = prom.query("kproxy_redirects_total")
        agree = sum(changes.values()) == metrics_sum(
            exposed, "kproxy_leader_changes_total"
        ) and sum(redirects.values()) == metrics_sum(exposed, "kproxy_redirects_total")
        return (changes, redirects) if agree else None

    agreed = wait_until(
        prometheus_agrees, 30, what="Prometheus to hold kproxy's counts", interval=0.5
    )
    assert agreed is not None
    changes, redirects = agreed
    total_changes = sum(changes.values())
    assert total_changes > 0 and sum(redirects.values()) > 0

    # Leader changes: each is a real move (leader and epoch as the test set them), and
    # no move is counted twice.
    events = read_events(kp)
    change_events = [e for e in events if e["type"] == "leader_change"]
    assert len(change_events) == total_changes
    seen_states = set()
    for e in change_events:
        p, epoch, leader = e["partition"], e["new_epoch"], e["new_leader"]
        assert e["topic"] == TOPIC
        assert (p, epoch) not in seen_states, f"move {p}@{epoch} counted twice"
        seen_states.add((p, epoch))
        assert 1 <= epoch <= len(moves.by_partition[p]), e
        assert moves.by_partition[p][epoch - 1][0] == leader, (e, moves.by_partition[p])
    assert total_changes <= moves.total()
    # Every move between two observed states adds one epoch: their sum is every move
    # the clients could have seen, and at the end they have seen the last one.
    per_partition_epochs = {p: max(ep for q, ep in seen_states if q == p) for p, _ in seen_states}
    for p, top in per_partition_epochs.items():
        assert top == len(moves.by_partition[p]), f"partition {p}: last move not seen"

    # Redirects to node N only after some partition moved to N (before the redirect).
    redirect_events = [e for e in events if e["type"] == "redirect" and e["to_node"] is not None]
    first_move_to = {
        b: min((t for m in moves.by_partition.values() for ld, _, t in m if ld == b), default=None)
        for b in BROKERS
    }
    for labels in redirects:
        to_node = int(dict(labels)["to_node"])
        assert first_move_to[to_node] is not None, f"redirect to {to_node}, never a leader"
    for e in redirect_events:
        ts = parse_ts(e["ts"])
        moved_there = [t for ld, _, t in moves.by_partition[e["partition"]] if ld == e["to_node"]]
        assert moved_there and min(moved_there) <= ts, e
        assert ts >= churn_started

    # The event log: every line parses, carries the schema, and counts match the metrics.
    assert all(e["schema"] == 1 and e["ts"].endswith("Z") for e in events)
    metrics = parse_exposition(kp.final_metrics)  # type: ignore[attr-defined]
    by_type = Counter(e["type"] for e in events)
    for event_type, count in by_type.items():
        assert (
            metrics.get(("kproxy_events_written_total", (("sink", "file"), ("type", event_type))))
            == count
        )
    assert metrics_sum(metrics, "kproxy_events_dropped_total") == 0
    assert by_type["redirect"] == metrics_sum(metrics, "kproxy_redirects_total") + metrics_sum(
        metrics, "kproxy_redirects_without_leader_total"
    )
    assert by_type["recovery"] == metrics_sum(metrics, "kproxy_recoveries_total")
    assert by_type["node_discovered"] == metrics_sum(metrics, "kproxy_nodes_discovered_total")
    assert by_type["request_sample"] > 0

    # librdkafka's mock cluster sends a byte after every Metadata v13 response's message:
    # kept from the clients (tests/session/test_session_bytes_after.py), counted, and
    # logged (at most one line per 10 s).
    assert metrics.get(("kproxy_responses_trimmed_total", (("api", "Metadata"),)), 0) > 0
    assert "carried 1 byte(s) after its message" in kp.log()

    # promtool lints the exposition of this very run.
    check = subprocess.run(
        ["promtool", "check", "metrics"],
        input=kp.final_metrics.encode(),  # type: ignore[attr-defined]
        capture_output=True,
    )
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()


def read_events(kp: KproxyProcess) -> list[dict[str, Any]]:
    """Stop kproxy (which flushes its event log) and read every line."""
    metrics_before = kp.metrics_text()
    kp.stop()
    kp.final_metrics = metrics_before  # type: ignore[attr-defined]
    return read_event_files(kp.tmp / "events")


def parse_ts(ts: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
