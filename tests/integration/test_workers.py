"""`runtime.workers: 2` against a real Tansu broker: every connection is served whichever
worker the kernel hands it to, the supervisor's scrape is the sum of its workers', every
worker opens the node's listener, a killed worker is replaced and only its own
connections are lost, and a reload and a drain reach both workers; and, against
librdkafka's mock cluster, a leader move both workers see is counted and logged once.

Each worker's own admin endpoints are read on the Unix socket the supervisor gave it
(its environment names it), beside the supervisor's one answer for all."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.churn_traffic import read_event_files
from tests.kproxy_process import REPO, KproxyProcess
from tests.kproxy_workers import fixed_listeners, running, worker_pids
from tests.peers.mock_cluster import MockCluster
from tests.peers.net import wait_until
from tests.peers.tansu import TANSU_NODE_ID, TansuBroker
from tests.raw_kafka import metadata_v1, read_frame

pytestmark = pytest.mark.peers

CONNECTIONS = 24  # each lands on worker 0 or 1: all on one has odds of 2 in 2**24


@pytest.fixture(scope="module")
def tansu() -> Iterator[TansuBroker]:
    with TansuBroker() as broker:
        yield broker


@pytest.fixture
def kproxy(tansu: TansuBroker, tmp_path: Path) -> Iterator[KproxyProcess]:
    listeners = fixed_listeners((TANSU_NODE_ID,))
    proc = KproxyProcess(tmp_path, [tansu.bootstrap], listeners=listeners, runtime={"workers": 2})
    with running(proc):
        yield proc


def worker_socket(pid: int) -> str:
    env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    for entry in env:
        if entry.startswith(b"KPROXY_WORKER_ADMIN="):
            return entry.split(b"=", 1)[1].decode()
    raise AssertionError(f"worker {pid} has no admin socket")


def worker_get(pid: int, path: str) -> bytes:
    """GET `path` from one worker's own admin server, on its Unix socket."""
    import asyncio

    async def get() -> bytes:
        connector = aiohttp.UnixConnector(path=worker_socket(pid))
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.get(f"http://worker{path}") as response,
        ):
            assert response.status == 200, path
            return await response.read()

    return asyncio.run(get())


def sample(text: str, name: str, **labels: str) -> float:
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def open_answered(
    proc: KproxyProcess, count: int, every_topic: bool = False
) -> list[socket.socket]:
    """`count` connections to the bootstrap port, each answered once (Metadata v1)."""
    out = []
    for i in range(count):
        sock = socket.create_connection(("127.0.0.1", proc.bootstrap_port), timeout=10)
        sock.sendall(metadata_v1(i + 1, every_topic))
        assert read_frame(sock)[:4] == (i + 1).to_bytes(4, "big")
        out.append(sock)
    return out


def still_answers(sock: socket.socket, every_topic: bool = False) -> bool:
    try:
        sock.sendall(metadata_v1(999, every_topic))
        return read_frame(sock)[:4] == (999).to_bytes(4, "big")
    except OSError:
        return False


def test_connections_spread_over_workers_and_the_scrape_is_their_sum(
    kproxy: KproxyProcess,
) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kproxy.bootstrap, "acks": "all"})
    for i in range(200):
        producer.produce("workers-spread", b"%d" % i)
    assert producer.flush(30) == 0
    del producer
    sockets = open_answered(kproxy, CONNECTIONS)
    try:
        pids = worker_pids(kproxy)
        assert len(pids) == 2
        for pid in pids:  # the kernel gave each worker some of them
            text = worker_get(pid, "/metrics").decode()
            assert sample(text, "kproxy_connections_active", listener="bootstrap") > 0
            # Every worker learned the node and serves its listener.
            nodes = json.loads(worker_get(pid, "/topology"))["nodes"]
            assert nodes and all(n["listener_state"] == "serving" for n in nodes)

        def merged_is_sum() -> bool:
            before = [worker_get(pid, "/metrics").decode() for pid in pids]
            merged = kproxy.metrics_text()
            after = [worker_get(pid, "/metrics").decode() for pid in pids]
            if before != after:
                return False  # a worker counted something in between: again
            for name, labels in (
                ("kproxy_connections_opened_total", {"listener": "bootstrap"}),
                ("kproxy_connections_active", {"listener": "bootstrap"}),
                ("kproxy_frames_total", {"direction": "request"}),
                ("kproxy_bytes_total", {"direction": "response"}),
            ):
                total = sum(sample(text, name, **labels) for text in before)
                assert total > 0, name
                if sample(merged, name, **labels) != total:
                    return False
            # A fact every worker states alike is stated once, not doubled.
            assert sample(merged, "kproxy_cluster_reached") == 1
            assert sample(merged, "kproxy_workers") == 2
            return True

        wait_until(merged_is_sum, 20, what="the supervisor's scrape equal to its workers' sum")
        assert kproxy.metrics_text().count("# TYPE kproxy_frames_total counter") == 1
    finally:
        for sock in sockets:
            sock.close()


def test_a_killed_worker_is_replaced_and_only_its_connections_are_lost(
    kproxy: KproxyProcess,
) -> None:
    sockets = open_answered(kproxy, CONNECTIONS)
    try:
        victim, survivor = worker_pids(kproxy)
        held = sample(
            worker_get(survivor, "/metrics").decode(),
            "kproxy_connections_active",
            listener="bootstrap",
        )
        assert 0 < held < CONNECTIONS
        os.kill(victim, signal.SIGKILL)
        answered = [still_answers(sock) for sock in sockets]
        assert sum(answered) == held  # the survivor's, every one, and no other
        wait_until(
            lambda: (
                kproxy.metric("kproxy_worker_restarts_total") == 1
                and kproxy.metric("kproxy_workers") == 2
                and kproxy.admin_get("/readyz")[0] == 200
            ),
            30,
            what="the killed worker replaced",
        )
        assert victim not in worker_pids(kproxy)
        assert survivor in worker_pids(kproxy)
        assert "worker 0" in kproxy.log() or "worker 1" in kproxy.log()
        for sock in open_answered(kproxy, CONNECTIONS):  # new connections: all served
            sock.close()
    finally:
        for sock in sockets:
            sock.close()


def test_reload_and_drain_reach_every_worker(kproxy: KproxyProcess) -> None:
    config = yaml.safe_load(kproxy.config_path.read_text())
    config["limits"] = {"idle_timeout_seconds": 120.0}
    kproxy.config_path.write_text(yaml.safe_dump(config))
    assert kproxy.proc is not None
    kproxy.proc.send_signal(signal.SIGHUP)
    wait_until(
        lambda: kproxy.metric("kproxy_config_reloads_total", result="applied") == 2,
        30,
        what="both workers reloaded",
    )
    pids = worker_pids(kproxy)
    held = open_answered(kproxy, 4)
    try:
        assert kproxy.stop(signal.SIGTERM, timeout=20) == 0
    finally:
        for sock in held:
            sock.close()
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in _state(pid)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", kproxy.bootstrap_port), timeout=2)


def _state(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return ""


def test_a_worker_that_cannot_start_stops_the_supervisor(
    tansu: TansuBroker, tmp_path: Path
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as held:  # the bootstrap port, taken
        listeners = {"bootstrap_port": held.getsockname()[1], "broker_port_base": 1024}
        proc = KproxyProcess(tmp_path, [tansu.bootstrap], listeners=listeners)
        proc.config["runtime"] = {"workers": 2}
        proc.config_path.write_text(yaml.safe_dump(proc.config))
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        argv = [sys.executable, "-m", "kproxy", "run", "--config", str(proc.config_path)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 1, done.stderr
    assert "could not start (exit status 1): stopping" in done.stderr


def test_a_leader_change_both_workers_see_is_counted_and_logged_once(tmp_path: Path) -> None:
    """Clients on both workers read the same partition's leader as it moves: each worker's
    own table follows the moves, and the moves are counted and logged once in all."""
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic("moves", 1, 3)
        cluster.set_leader("moves", 0, 1)
        listeners = fixed_listeners((1, 2, 3))
        proc = KproxyProcess(
            tmp_path, cluster.bootstraps.split(","), listeners=listeners, runtime={"workers": 2}
        )
        with running(proc):
            sockets = open_answered(proc, CONNECTIONS, every_topic=True)  # tables: leader 1
            try:
                pids = worker_pids(proc)
                for moves, leader in enumerate((2, 3), start=1):
                    cluster.set_leader("moves", 0, leader)
                    for sock in sockets:
                        assert still_answers(sock, every_topic=True)
                    for pid in pids:  # each worker saw this move on its own connections
                        partitions = json.loads(worker_get(pid, "/topology"))["partitions"]
                        assert [p["leader"] for p in partitions if p["topic"] == "moves"] == [
                            leader
                        ]
                    assert proc.metric("kproxy_leader_changes_total") == moves
                assert proc.metric("kproxy_nodes_discovered_total") == 3
            finally:
                for sock in sockets:
                    sock.close()
        changes = [e for e in read_event_files(tmp_path / "events") if e["type"] == "leader_change"]
        assert sorted(e["new_leader"] for e in changes) == [2, 3]


def test_workers_drain_when_the_supervisor_is_killed(kproxy: KproxyProcess) -> None:
    pids = worker_pids(kproxy)
    kproxy.stop(signal.SIGKILL)
    wait_until(
        lambda: all(not Path(f"/proc/{pid}").exists() or _state(pid) == "Z" for pid in pids),
        30,
        what="every worker gone with its supervisor",
    )
