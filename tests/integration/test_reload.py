"""Configuration reload (SIGHUP) while a producer and a consumer run through kproxy.

librdkafka's mock cluster advertises names only kproxy's dial overrides resolve. kproxy
starts without a way to reach broker 3; leadership of one partition moves there, and
its records wait. A reload that adds broker 3's override lets them through; a reload
that caps connections per client IP refuses the next connection while established ones
stay; a change of the bootstrap port is reported as needing a restart; an invalid file
is rejected. Established connections are never reopened and every record is read back.
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kproxy_process import KproxyProcess
from tests.peers.mock_cluster import MockCluster
from tests.peers.net import free_port, wait_until
from tests.raw_kafka import closed_by_peer, metadata_v1

pytestmark = pytest.mark.peers

TOPIC = "reload"
PARTITIONS = 3
REACHABLE = {f"broker-{i}.cluster.invalid": "127.0.0.1" for i in (1, 2)}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as mc:
        mc.create_topic(TOPIC, PARTITIONS, 3)
        for partition in range(PARTITIONS):
            mc.set_leader(TOPIC, partition, 1 + partition % 2)
        mc.advertise_invalid_names("cluster.invalid")
        yield mc


def reloads(proc: KproxyProcess, result: str) -> float:
    return proc.metric("kproxy_config_reloads_total", result=result)


def test_reload_applies_live_keys_without_dropping_connections(
    cluster: MockCluster, tmp_path: Path
) -> None:
    from confluent_kafka import Consumer, Producer

    proc = KproxyProcess(
        tmp_path, cluster.bootstraps.split(","), cluster={"dial_overrides": dict(REACHABLE)}
    )
    with proc:
        acked: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        failed: list[Any] = []
        producer = Producer(
            {"bootstrap.servers": proc.bootstrap, "enable.idempotence": True, "linger.ms": 5}
        )
        stop = threading.Event()

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                failed.append(err)
            else:
                acked[msg.partition()].append(msg.value())

        def write() -> None:
            i = 0
            while not stop.is_set():
                try:
                    producer.produce(TOPIC, b"r-%d" % i, partition=i % PARTITIONS,
                                     on_delivery=delivered)  # fmt: skip
                    i += 1
                except BufferError:
                    pass
                producer.poll(0.005)

        writer = threading.Thread(target=write)
        writer.start()
        try:
            wait_until(lambda: all(len(v) > 50 for v in acked.values()), 30, what="writes")
            node_opens = {
                n: proc.metric("kproxy_connections_opened_total", listener=f"node-{n}")
                for n in (1, 2)
            }

            # Partition 0 moves to broker 3, which kproxy cannot reach yet: its records wait.
            cluster.set_leader(TOPIC, 0, 3)
            wait_until(
                lambda: (
                    proc.metric("kproxy_upstream_connect_failures_total", reason="refused")
                    + proc.metric("kproxy_upstream_connect_failures_total", reason="timeout")
                    > 0
                ),
                30,
                what="a failed dial to broker 3",
            )
            stuck = len(acked[0])

            # 1. The override for broker 3: new dials reach it, partition 0 flows again.
            proc.reload_with({"cluster": {"dial_overrides": {
                **REACHABLE, "broker-3.cluster.invalid": "127.0.0.1"}}})  # fmt: skip
            wait_until(lambda: reloads(proc, "applied") == 1, 15, what="the reload applied")
            wait_until(lambda: len(acked[0]) > stuck + 50, 60, what="partition 0 to flow")
            assert "reloaded cluster.dial_overrides (takes effect: new connections" in proc.log()

            # 2. A cap on connections per client IP, at the count open now: the next
            # connection is refused, the established ones carry on.
            open_now = int(proc.metric("kproxy_connections_active", listener="bootstrap")) + sum(
                int(proc.metric("kproxy_connections_active", listener=f"node-{n}"))
                for n in (1, 2, 3)
            )
            proc.reload_with({"limits": {"max_connections_per_client_ip": open_now}})
            wait_until(lambda: reloads(proc, "applied") == 2, 15, what="the cap applied")
            with socket.create_connection(("127.0.0.1", proc.bootstrap_port), 10) as extra:
                extra.sendall(metadata_v1(1))
                assert closed_by_peer(extra)
            refused = proc.metric(
                "kproxy_connections_refused_total", listener="bootstrap", reason="client_ip_limit"
            )
            assert refused == 1
            count = sum(len(v) for v in acked.values())
            wait_until(
                lambda: sum(len(v) for v in acked.values()) > count + 100, 30, what="more writes"
            )

            # 3. A new bootstrap port needs a restart: reported, the old one keeps serving.
            proc.reload_with({"listeners": {"bootstrap_port": free_port()},
                               "limits": {"max_connections_per_client_ip": None}})  # fmt: skip
            wait_until(lambda: reloads(proc, "restart_needed") == 1, 15, what="restart_needed")
            assert "changes listeners.bootstrap_port: needs a restart" in proc.log()
            assert 'restart_pending="true"' in proc.metrics_text()

            # 4. An invalid file changes nothing.
            proc.config_path.write_text("listeners: [not, a, mapping\n")
            assert proc.proc is not None
            proc.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: reloads(proc, "rejected") == 1, 15, what="the rejection")
            assert "not reloaded, the running one stays" in proc.log()
            count = sum(len(v) for v in acked.values())
            wait_until(
                lambda: sum(len(v) for v in acked.values()) > count + 100, 30, what="still served"
            )
        finally:
            stop.set()
            writer.join()
        assert producer.flush(30) == 0
        assert not failed, failed[:3]
        for n, opened in node_opens.items():
            assert proc.metric("kproxy_connections_opened_total", listener=f"node-{n}") == opened

        consumer = Consumer(
            {
                "bootstrap.servers": proc.bootstrap,
                "group.id": "reload",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([TOPIC])
        read: set[bytes] = set()
        want = {v for values in acked.values() for v in values}

        def all_read() -> bool:
            for msg in consumer.consume(1000, 0.5):
                if msg.error() is None:
                    read.add(msg.value())
            return want <= read

        try:
            wait_until(all_read, 60, what="every acked record read back")
        finally:
            consumer.close()
