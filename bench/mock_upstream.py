"""The ``mock`` upstream: librdkafka's mock cluster (three brokers, in this process), for
the leader-churn workload, and the `LeaderMover` that moves its leaders (see
`bench.upstreams` for the sides and paths every upstream has)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.peers import HaproxyPeer, Unavailable
from bench.upstreams import HAPROXY_SIDE, MAIN, Upstream
from tests.peers.net import LOOPBACK, free_ports


class MockUpstream(Upstream):
    """Two mock clusters of three brokers in this process; the haproxy side's brokers
    advertise haproxy's ports (one frontend per broker)."""

    name = "mock"

    def __init__(self, workdir: Path, brokers: int = 3) -> None:
        super().__init__(workdir)
        self.brokers = brokers
        self.node_ids = list(range(1, brokers + 1))
        self.clusters: dict[str, Any] = {}

    def direct_bootstrap(self) -> str:
        return str(self.clusters[MAIN].bootstraps)

    def start(self) -> None:
        from kproxy.demo.mockcluster import MockCluster

        self.clusters[MAIN] = MockCluster(self.brokers)
        hap = MockCluster(self.brokers)
        ports = hap.broker_ports()
        front = dict(zip(ports, free_ports(len(ports)), strict=True))
        routes = [(front[b], f"{LOOPBACK}:{p}") for b, p in sorted(ports.items())]
        try:
            self.haproxy = HaproxyPeer(
                "haproxy-mock", routes[0][1], self.workdir, extra_routes=routes
            ).start()
        except (Unavailable, RuntimeError, TimeoutError) as exc:
            self.haproxy_error = str(exc)
            hap.close()
            return
        for b, port in front.items():
            hap.set_host_port(b, LOOPBACK, port)
        self.clusters[HAPROXY_SIDE] = hap

    def stop(self) -> None:
        self.stop_forwarders()
        for mc in self.clusters.values():
            mc.close()
        self.clusters.clear()

    def create_topic(self, topic: str, partitions: int, side: str) -> None:
        self.clusters[side].create_topic(topic, partitions, self.brokers)

    def cluster(self, side: str) -> Any:
        return self.clusters[side]


@dataclass
class LeaderMover:
    """Moves the leader of every partition of ``topic`` to the next broker every
    ``interval`` seconds, on a thread, until stopped."""

    set_leader: Callable[[str, int, int], None]
    topic: str
    partitions: int
    brokers: list[int]
    interval: float = 0.2

    def __post_init__(self) -> None:
        self.moves = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-mover", daemon=True)

    def _run(self) -> None:
        step = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            step += 1
            for p in range(self.partitions):
                leader = self.brokers[(step + p) % len(self.brokers)]
                try:
                    self.set_leader(self.topic, p, leader)
                    self.moves += 1
                except Exception as exc:  # recorded, the run goes on
                    if len(self.errors) < 5:
                        self.errors.append(str(exc))
            next_at += self.interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def start(self) -> LeaderMover:
        self._thread.start()
        return self

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(timeout=5)
        return self.moves
