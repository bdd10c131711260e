"""The Apache Kafka upstream: one KRaft node from Maven Central, with a listener that
advertises haproxy's port."""

from __future__ import annotations

import contextlib
from pathlib import Path

from bench.peers import (
    HaproxyPeer,
    Unavailable,
)
from bench.upstreams import Upstream
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import LOOPBACK, free_ports


class KafkaUpstream(Upstream):
    """One Apache Kafka node (KRaft, combined mode). Clients and proxies use its INTERNAL
    listener (advertised as ``127.0.0.1:port``); an extra ``HAPROXY`` listener is
    advertised as haproxy's port, and haproxy forwards to it."""

    name = "kafka"
    node_ids = [1]
    # The JVM compiles the broker's path for a workload in its first seconds, and direct,
    # first in every round, paid for it: in the record at 424411c direct read 0.75 of its
    # median in the first round of confluent-kafka's consume (817,985 msg/s against
    # 1.08-1.15 M) and 0.65 of it with Kafka's perf consumer, which put the proxies'
    # ratios for that round 0.1-0.3 above their medians (0.96-1.22 and 0.81-0.96). Tansu
    # is restarted before every round and compiles nothing.
    warms_up = True

    def __init__(self, workdir: Path, heap: str = "512m") -> None:
        super().__init__(workdir)
        self.cluster = KafkaCluster(
            1, heap=heap, workdir=workdir / "kafka", keep_workdir=False, log_level="warn"
        )
        node = self.cluster.nodes[1]
        self.hap_listener_port, self.hap_port = free_ports(2)
        listeners = (
            f"CONTROLLER://{LOOPBACK}:{node.controller_port},"
            f"INTERNAL://{LOOPBACK}:{node.internal_port},"
            f"EXTERNAL://{LOOPBACK}:{node.external_port},"
            f"HAPROXY://{LOOPBACK}:{self.hap_listener_port}"
        )
        advertised = (
            f"INTERNAL://{LOOPBACK}:{node.internal_port},"
            f"EXTERNAL://{node.external_advertised},"
            f"HAPROXY://{LOOPBACK}:{self.hap_port}"
        )
        self.cluster.broker_config.update(
            {
                "listeners": listeners,
                "advertised.listeners": advertised,
                "listener.security.protocol.map": (
                    "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,HAPROXY:PLAINTEXT"
                ),
                # Runs write hundreds of MB each and the harness drops each run's topic
                # after it: its files go at once, and with them their dirty pages.
                "log.retention.check.interval.ms": "10000",
                "log.segment.delete.delay.ms": "0",
            }
        )

    def direct_bootstrap(self) -> str:
        return self.cluster.internal_bootstrap

    def broker_pid(self, side: str) -> int | None:
        # One node behind every side: its haproxy listener is the only difference.
        process = self.cluster.nodes[1].process
        return process.pid if process is not None else None

    def start(self) -> None:
        self.cluster.start()
        try:
            self.haproxy = HaproxyPeer(
                "haproxy-kafka",
                f"{LOOPBACK}:{self.hap_listener_port}",
                self.workdir,
                port=self.hap_port,
            ).start()
        except (Unavailable, RuntimeError, TimeoutError) as exc:
            self.haproxy_error = str(exc)

    def stop(self) -> None:
        self.stop_forwarders()
        self.cluster.close()

    def create_topic(self, topic: str, partitions: int, side: str) -> None:
        # One broker serves both sides: a topic of either side is created on it.
        self.cluster.create_topic(topic, partitions=partitions, rf=1)

    def drop_topics(self, topics: list[str]) -> None:
        if not topics:
            return
        admin = self.cluster.admin()
        futures = admin.delete_topics(topics, request_timeout=30)
        for fut in futures.values():
            with contextlib.suppress(Exception):
                fut.result(timeout=30)
