"""Cluster switchover: clients moved from one cluster to another through kproxy, untouched.

Two librdkafka mock clusters, `a` and `b`, each with brokers 1-3 (their node ids
collide, as two real clusters' do). A producer and a consumer group run through kproxy
while it switches a -> b (admin endpoint) and back (reload): neither is restarted or
reconfigured, every record acknowledged is in the cluster that was served when it was
acknowledged, node N keeps node N's kproxy port, and no broker address of either
cluster reaches a client. Refusals change nothing: an unknown cluster, the active one,
an unreachable one, and a second switchover while one is under way.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.event_files import read_lines
from tests.kproxy_process import KproxyProcess
from tests.kproxy_workers import fixed_listeners, running
from tests.peers.mock_cluster import MockCluster
from tests.peers.net import LOOPBACK, free_port, wait_until
from tests.switchover_clients import PythonClients, read_topic
from tests.switchover_clients import post_switch as post_to_admin

pytestmark = pytest.mark.peers

TOPIC = "moves"
PARTITIONS = 3


@pytest.fixture
def clusters() -> Iterator[tuple[MockCluster, MockCluster]]:
    with MockCluster(brokers=3) as a, MockCluster(brokers=3) as b:
        for cluster in (a, b):
            cluster.create_topic(TOPIC, PARTITIONS, 3)
        yield a, b


def switch_proxy(tmp: Path, a: MockCluster, b: MockCluster, **extra: Any) -> KproxyProcess:
    proc = KproxyProcess(tmp, a.bootstraps.split(","), **extra)
    del proc.config["cluster"]
    proc.config["clusters"] = {
        "a": {"bootstrap_servers": a.bootstraps.split(","), "connect_timeout_seconds": 2},
        "b": {"bootstrap_servers": b.bootstraps.split(","), "connect_timeout_seconds": 2},
    }
    proc.config["switchover"] = {"active": "a", "fence_seconds": 5}
    return proc


def post_switch(proc: KproxyProcess, cluster: str) -> tuple[int, dict[str, Any]]:
    return post_to_admin(proc.admin_port, cluster)


def read_all(cluster: MockCluster) -> list[bytes]:
    return read_topic(cluster.bootstraps, TOPIC, PARTITIONS)


def traffic_through(proc: KproxyProcess) -> PythonClients:
    """An idempotent producer and a consumer group (confluent-kafka) through kproxy."""
    return PythonClients(proc.bootstrap, TOPIC, "movers", "m")


def node_ports(proc: KproxyProcess) -> dict[int, str]:
    return {node["id"]: node["kproxy"] for node in proc.topology()["nodes"]}


def test_clients_move_to_the_other_cluster_and_back_untouched(
    clusters: tuple[MockCluster, MockCluster], tmp_path: Path
) -> None:
    a, b = clusters
    with switch_proxy(tmp_path, a, b) as proc:
        traffic = traffic_through(proc)
        try:
            wait_until(lambda: len(traffic.acked) >= 200, 30, what="records acknowledged by a")
            wait_until(lambda: len(traffic.consumed) >= 100, 30, what="records consumed from a")
            before = node_ports(proc)
            assert proc.topology()["cluster"] == {
                "active": "a", "clusters": ["a", "b"], "switching": None
            }  # fmt: skip

            status, summary = post_switch(proc, "b")
            assert status == 200, summary
            switched = time.monotonic()
            assert summary["from"] == "a" and summary["to"] == "b", summary
            assert summary["fence_seconds"] < 5, summary
            # The producer goes on, on b, without being told: what it writes now is b's.
            wait_until(lambda: len(traffic.acked_since(switched)) >= 200, 60,
                       what="records acknowledged by b")  # fmt: skip
            # (Those acknowledged right after it may have been a's: their callbacks run late.)
            acked_by_b = set(traffic.acked_since(switched + 0.5))
            on_b = set(read_all(b))
            assert acked_by_b <= on_b
            # So does the group: it reads records that only b holds (from b's start, or on
            # from the positions it had on a when b's log already reaches them: offsets are
            # a cluster's own, and no offsets were synchronised to these mock clusters).
            wait_until(lambda: len(set(traffic.consumed) & set(traffic.acked_since(switched + 0.5)))
                       >= 100, 60, what="records consumed from b")  # fmt: skip
            topology = proc.topology()
            assert topology["cluster"]["active"] == "b"
            # Node N of b is served where node N of a was: what clients know stays true.
            assert node_ports(proc) == before
            b_ports = {f"{LOOPBACK}:{port}" for port in b.broker_ports().values()}
            assert {node["dial"] for node in topology["nodes"]} == b_ports

            # Back to a by a reload that names it (the file said a; it says b, then a).
            proc.reload_with({"switchover": {"active": "b"}})  # b already: refused, no change
            wait_until(lambda: proc.metric("kproxy_switchovers_total", result="active") == 1, 10,
                       what="the reload's no-op refusal")  # fmt: skip
            proc.reload_with({"switchover": {"active": "a"}})
            wait_until(lambda: proc.topology()["cluster"]["active"] == "a", 30, what="switchback")
            back = time.monotonic()
            wait_until(lambda: len(traffic.acked_since(back)) >= 100, 60,
                       what="records acknowledged by a again")  # fmt: skip
        finally:
            traffic.close()
        assert traffic.failed == []
        # Every acknowledged record is in a or b: nothing was lost by the moves.
        everything = set(read_all(a)) | set(read_all(b))
        assert {value for _, value in traffic.acked} <= everything
        assert proc.metric("kproxy_switchovers_total", trigger="admin", result="completed") == 1
        assert proc.metric("kproxy_switchovers_total", trigger="reload", result="completed") == 1
        assert proc.metric("kproxy_active_cluster", cluster="a") == 1
        assert proc.metric("kproxy_active_cluster", cluster="b") == 0
        moved = proc.metric("kproxy_switchover_connections_total")
        assert moved >= 4, moved  # the producer's and the consumer's, twice at least
        # All closed between responses: nothing the clients sent went unanswered.
        assert proc.metric("kproxy_switchover_requests_unanswered_total") == 0
        # Each client's first success on the target, timed from the fence.
        resumes = proc.metric("kproxy_switchover_resume_seconds_count", api="Produce")
        assert resumes == 2, resumes  # the producer, after each switchover
    events = [e for e in read_lines(tmp_path / "events") if e["type"] == "switchover"]
    phases = [(e["phase"], e["trigger"], e["from_cluster"], e["to_cluster"]) for e in events]
    assert [phase for phase in phases if phase[0] != "resumed"] == [
        ("fenced", "admin", "a", "b"),
        ("completed", "admin", "a", "b"),
        ("refused", "reload", "b", "b"),
        ("fenced", "reload", "b", "a"),
        ("completed", "reload", "b", "a"),
    ]
    resumed = [
        (e["to_cluster"], e["client_id"], e["api"]) for e in events if e["phase"] == "resumed"
    ]
    # The switchover to b: both clients, each its own way, in the events' order (after
    # the completion, before the next switchover); the switchback: the producer at least.
    assert resumed[:2] in (
        [("b", "m-producer", "Produce"), ("b", "m-consumer", "Fetch")],
        [("b", "m-consumer", "Fetch"), ("b", "m-producer", "Produce")],
    ), resumed
    assert ("a", "m-producer", "Produce") in resumed[2:], resumed
    assert all(0 < e["ms"] < 60_000 for e in events if e["phase"] == "resumed")
    first_resumed = phases.index(("resumed", "admin", "a", "b"))
    assert phases[first_resumed - 1][0] == "completed"


def test_refused_switchovers_change_nothing(
    clusters: tuple[MockCluster, MockCluster], tmp_path: Path
) -> None:
    a, b = clusters
    silent = socket.create_server((LOOPBACK, 0))  # accepts, never answers
    closed_port = free_port()
    proc = switch_proxy(tmp_path, a, b)
    proc.config["clusters"]["gone"] = {"bootstrap_servers": [f"{LOOPBACK}:{closed_port}"]}
    proc.config["clusters"]["silent"] = {
        "bootstrap_servers": [f"{LOOPBACK}:{silent.getsockname()[1]}"],
        "connect_timeout_seconds": 3,
    }
    try:
        with proc:
            wait_until(lambda: proc.topology()["cluster_reached"], 30, what="cluster a")
            before = proc.topology()["nodes"]
            assert post_switch(proc, "nowhere") == (404, {
                "error": "no cluster named 'nowhere' (clusters: a, b, gone, silent)",
                "reason": "unknown",
            })  # fmt: skip
            status, answer = post_switch(proc, "a")
            assert (status, answer["reason"]) == (409, "active")
            status, answer = post_switch(proc, "gone")
            assert (status, answer["reason"]) == (503, "unreachable"), answer
            assert "cannot be reached" in answer["error"]

            # A second switchover while one is under way (here: still probing a target
            # that accepts and never answers) is refused at once.
            first: list[tuple[int, dict[str, Any]]] = []
            thread = threading.Thread(target=lambda: first.append(post_switch(proc, "silent")))
            thread.start()
            wait_until(lambda: proc.topology()["cluster"]["switching"] == "silent", 10,
                       what="the first switchover under way")  # fmt: skip
            status, answer = post_switch(proc, "b")
            assert (status, answer["reason"]) == (409, "in_progress"), answer
            thread.join(30)
            assert first[0][0] == 503 and first[0][1]["reason"] == "unreachable", first

            topology = proc.topology()
            assert topology["cluster"] == {
                "active": "a", "clusters": ["a", "b", "gone", "silent"], "switching": None
            }  # fmt: skip
            assert topology["nodes"] == before
            for reason, count in (("unknown", 1), ("active", 1), ("unreachable", 2),
                                  ("in_progress", 1)):  # fmt: skip
                assert proc.metric("kproxy_switchovers_total", result=reason) == count, reason
            assert proc.metric("kproxy_switchovers_total", result="completed") == 0
            assert proc.metric("kproxy_switchover_connections_total") == 0
    finally:
        silent.close()


def test_failover_when_the_active_cluster_stops_answering(
    clusters: tuple[MockCluster, MockCluster], tmp_path: Path
) -> None:
    a, b = clusters
    proc = switch_proxy(tmp_path, a, b)
    proc.config["switchover"]["failover"] = {
        "enabled": True,
        "after_seconds": 1,
        "min_interval_seconds": 300,
    }
    with proc:
        traffic = traffic_through(proc)
        try:
            wait_until(lambda: len(traffic.acked) >= 100, 30, what="records acknowledged by a")
            for broker in (1, 2, 3):
                a.set_down(broker)
            wait_until(lambda: proc.topology()["cluster"]["active"] == "b", 30, what="failover")
            failed_over = time.monotonic()
            wait_until(lambda: len(traffic.acked_since(failed_over)) >= 200, 60,
                       what="records acknowledged by b")  # fmt: skip
            acked_by_b = set(traffic.acked_since(failed_over + 0.5))
            assert acked_by_b <= set(read_all(b))
            # b stops answering too, a is back: no switch back within min_interval_seconds.
            for broker in (1, 2, 3):
                a.set_up(broker)
                b.set_down(broker)
            wait_until(lambda: "no failover: the last switchover" in proc.log(), 30,
                       what="the failover held back")  # fmt: skip
            assert proc.topology()["cluster"]["active"] == "b"
            for broker in (1, 2, 3):
                b.set_up(broker)
        finally:
            traffic.close()
        assert traffic.failed == []
        assert {value for _, value in traffic.acked} <= set(read_all(a)) | set(read_all(b))
        assert proc.metric("kproxy_switchovers_total", trigger="failover", result="completed") == 1
        assert proc.metric("kproxy_switchovers_total") == 1


def test_every_worker_switches(clusters: tuple[MockCluster, MockCluster], tmp_path: Path) -> None:
    a, b = clusters
    listeners = fixed_listeners((1, 2, 3))
    proc = switch_proxy(tmp_path, a, b, listeners=listeners, runtime={"workers": 2})
    with running(proc):
        traffic = traffic_through(proc)
        try:
            wait_until(lambda: len(traffic.acked) >= 100, 30, what="records acknowledged by a")
            status, answer = post_switch(proc, "b")
            assert status == 200, answer
            assert [w["to"] for w in answer["workers"]] == ["b", "b"], answer
            switched = time.monotonic()
            wait_until(lambda: len(traffic.acked_since(switched)) >= 100, 60,
                       what="records acknowledged by b")  # fmt: skip
            acked_by_b = set(traffic.acked_since(switched + 0.5))
            assert acked_by_b <= set(read_all(b))
            assert post_switch(proc, "b")[0] == 409  # both workers: b already
        finally:
            traffic.close()
        assert traffic.failed == []
        assert proc.metric("kproxy_switchovers_total", result="completed") == 2  # one each
        assert proc.topology()["cluster"]["active"] == "b"
