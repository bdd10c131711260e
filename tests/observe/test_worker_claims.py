"""kproxy.observe.worker_claims: a fact several workers see is reported by exactly one of
them, whichever sees it first, across real processes racing on the shared table; and
two workers' observers fed the same responses log and count each leader change and
each node once between them."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

from kproxy.config.settings import ClusterSettings, EventSettings, Settings
from kproxy.observe.observability import Observability
from kproxy.observe.worker_claims import WorkerClaims, create_claims_file
from kproxy.protocol.walker import LeaderObservation
from tests.event_files import read_lines

MOVES = 3000
PARTITIONS = 40


def _moves() -> list[tuple[str, int, int]]:
    """Each partition's leader moving through epochs 1..; every state once."""
    return [(f"leader t {i % PARTITIONS}", i // PARTITIONS + 1, i % 3) for i in range(MOVES)]


def _claim_all(path: str, start: Any, won: Any) -> None:
    claims = WorkerClaims(path)
    start.wait()
    won.put([i for i, move in enumerate(_moves()) if claims.first(*move)])
    claims.close()


def test_racing_processes_claim_every_fact_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "claims"
    create_claims_file(path)
    context = multiprocessing.get_context("spawn")
    start, won = context.Barrier(3), context.Queue()
    workers = [context.Process(target=_claim_all, args=(str(path), start, won)) for _ in range(3)]
    for worker in workers:
        worker.start()
    try:
        every = Counter(i for _ in workers for i in won.get(timeout=120))
    finally:
        for worker in workers:
            worker.join(30)
            worker.kill()
    assert sorted(every) == list(range(MOVES))  # every move claimed by someone...
    assert set(every.values()) == {1}  # ...and by one worker alone


def test_a_state_moves_only_forward(tmp_path: Path) -> None:
    path = tmp_path / "claims"
    create_claims_file(path)
    one, other = WorkerClaims(str(path)), WorkerClaims(str(path))
    assert one.first("leader orders 0", 5, 1)
    assert not other.first("leader orders 0", 5, 1)  # the same move, seen second
    assert not other.first("leader orders 0", 4, 2)  # an older one, seen late
    assert other.first("leader orders 0", 5, 2)  # the same epoch, another leader
    assert one.first("leader orders 0", 6, 2)
    assert one.first("leader orders 1", 6, 2)  # another key: its own state
    # Metadata before v7: no epoch (-1), moves told apart by the leader alone.
    assert one.first("leader old 0", -1, 1)
    assert not other.first("leader old 0", -1, 1)
    assert other.first("leader old 0", -1, 2)
    assert (one.claimed, one.seen_elsewhere) == (4, 0)
    assert (other.claimed, other.seen_elsewhere) == (2, 3)
    one.close()
    other.close()


def _observer(tmp_path: Path, name: str, claims: Path) -> Observability:
    settings = Settings(
        cluster=ClusterSettings(bootstrap_servers=(("127.0.0.1", 9092),)),
        events=EventSettings(dir=tmp_path / name),
    )
    return Observability(
        settings, instance=name, runtime_collectors=False, claims=WorkerClaims(str(claims))
    )


def sample(o: Observability, name: str, **labels: str) -> float | None:
    return o.metrics.registry.get_sample_value(name, labels)


def _metadata(o: Observability, leader: int, epoch: int) -> None:
    o.leaders(
        3, "app", None, [LeaderObservation("orders", None, 0, 0, leader, epoch, False)], frozenset()
    )


def test_two_workers_observers_report_each_change_and_node_once(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    create_claims_file(claims)
    first, second = _observer(tmp_path, "w0", claims), _observer(tmp_path, "w1", claims)
    for o in (first, second):  # both workers see the partition, then the cluster's node
        _metadata(o, 1, 5)
        o.node_discovered(1, "10.0.0.5:9092", "broker-1.kafka:9092")
    _metadata(second, 2, 6)  # the second worker's clients see the move first
    _metadata(first, 2, 6)
    _metadata(first, 3, 7)  # then the first worker's
    _metadata(second, 3, 7)
    for o in (first, second):  # each worker's own table follows the cluster
        assert o.leaders_table.leader("orders", 0) == (3, 7)
    assert [
        sample(o, "kproxy_leader_changes_total", source_api="Metadata") for o in (first, second)
    ] == [1, 1]
    assert [sample(o, "kproxy_nodes_discovered_total") for o in (first, second)] == [1, 0]
    first.close()
    second.close()
    lines = read_lines(tmp_path / "w0") + read_lines(tmp_path / "w1")
    changes = sorted(
        (x["new_leader"], x["new_epoch"], x["proxy"]) for x in lines if x["type"] == "leader_change"
    )
    assert changes == [(2, 6, "w1"), (3, 7, "w0")]
    assert [x["proxy"] for x in lines if x["type"] == "node_discovered"] == ["w0"]
