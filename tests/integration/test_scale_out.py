"""Connections spread over a replica added behind a load balancer
(`limits.max_connection_age_seconds`): two kproxy replicas behind haproxy (round robin,
health-checked), the second started while an idempotent producer and a consumer run
through the first. Within one age period the second serves client connections too;
every acked record is read back once. Apache Kafka, librdkafka, haproxy; the replicas
listen on 127.0.0.2 and 127.0.0.3 with the same ports, haproxy on 127.0.0.1."""

from __future__ import annotations

import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import free_ports, port_open, wait_until
from tests.peers.procs import PeerProcess

pytestmark = [pytest.mark.peers, pytest.mark.slow]

TOPIC = "scale-out"
AGE = 4.0  # seconds, +-10%
REPLICAS = ("127.0.0.2", "127.0.0.3")


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=1, heap="384m", workdir=tmp_path_factory.mktemp("kafka")) as k:
        k.create_topic(TOPIC, 3, 1)
        yield k


def replica(
    kafka: KafkaCluster, tmp: Path, host: str, bootstrap: int, node_ports: dict[int, int]
) -> KproxyProcess:
    return KproxyProcess(
        tmp,
        kafka.external_real_bootstrap.split(","),
        cluster={"dial_overrides": kafka.dial_overrides},
        listeners={
            "bind_host": host,
            "advertised_host": "127.0.0.1",  # haproxy's address: clients come back through it
            "bootstrap_port": bootstrap,
            "node_port_overrides": node_ports,
        },
        limits={"max_connection_age_seconds": AGE},
    )


def haproxy_config(ports: list[int]) -> str:
    lines = [
        "global\n    maxconn 200\n",
        "defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 60s\n"
        "    timeout server 60s\n    balance roundrobin\n",
    ]
    for port in ports:
        lines.append(f"listen p{port}\n    bind 127.0.0.1:{port}\n")
        for i, host in enumerate(REPLICAS):
            lines.append(f"    server r{i} {host}:{port} check inter 200 fall 1 rise 1\n")
    return "".join(lines)


def client_requests(kp: KproxyProcess) -> float:
    """Requests a replica forwarded: clients it served (haproxy's health checks connect
    and close, and send none)."""
    return kp.metric("kproxy_frames_total", direction="request")


def test_connections_spread_over_a_replica_added_within_one_age(
    kafka: KafkaCluster, tmp_path: Path
) -> None:
    from confluent_kafka import Consumer, KafkaError, Producer

    exe = shutil.which("haproxy")
    if exe is None:
        pytest.skip("haproxy is not installed (bash .ci/install.sh)")
    bootstrap, *node_ports = free_ports(1 + len(kafka.running_ids()))
    nodes = dict(zip(kafka.running_ids(), node_ports, strict=True))
    (tmp_path / "haproxy.cfg").write_text(haproxy_config([bootstrap, *node_ports]))
    lb = PeerProcess(
        "haproxy", [exe, "-db", "-f", str(tmp_path / "haproxy.cfg")],
        log_path=tmp_path / "haproxy.log",
    )  # fmt: skip
    first = replica(kafka, tmp_path / "a", REPLICAS[0], bootstrap, nodes)
    second = replica(kafka, tmp_path / "b", REPLICAS[1], bootstrap, nodes)
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    acked: list[int] = []
    errors: list[KafkaError] = []
    read: Counter[int] = Counter()
    stop = threading.Event()
    produced = threading.Event()  # the producer flushed: `acked` is whole

    def produce() -> None:
        producer = Producer(
            {"bootstrap.servers": f"127.0.0.1:{bootstrap}", "enable.idempotence": True,
             "linger.ms": 5, "client.id": "scale-out-producer"}
        )  # fmt: skip

        def on_delivery(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                errors.append(err)
            else:
                acked.append(int(msg.value()))

        n = 0
        while not stop.is_set():
            producer.produce(TOPIC, str(n).encode(), on_delivery=on_delivery)
            n += 1
            producer.poll(0.002)
        producer.flush(60)
        produced.set()

    def consume() -> None:
        consumer = Consumer(
            {"bootstrap.servers": f"127.0.0.1:{bootstrap}", "group.id": "scale-out",
             "auto.offset.reset": "earliest", "client.id": "scale-out-consumer"}
        )  # fmt: skip
        consumer.subscribe([TOPIC])
        deadline = float("inf")
        try:
            while time.monotonic() < deadline:
                for msg in consumer.consume(500, 0.2):
                    if msg.error() is None:
                        read[int(msg.value())] += 1
                if produced.is_set():
                    if set(acked) <= read.keys():
                        return
                    deadline = min(deadline, time.monotonic() + 60)
        finally:
            consumer.close()

    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    with lb, first:
        wait_until(lambda: port_open("127.0.0.1", bootstrap), 15, what="haproxy")
        for t in threads:
            t.start()
        try:
            wait_until(lambda: len(acked) > 200 and len(read) > 200, 60, what="traffic via A")
            assert client_requests(first) > 0
            with second:
                added = time.monotonic()
                # One age period (and its jitter) for every connection to close once, and
                # haproxy's health check to see the new replica.
                wait_until(lambda: client_requests(second) > 0, AGE * 1.1 + 4, 0.2,
                           what="connections on the added replica")  # fmt: skip
                spread_after = time.monotonic() - added
                print(f"the added replica served clients {spread_after:.1f} s after it started")
                # Another age period of traffic over both, connections closing by age.
                acked_before = len(acked)
                wait_until(lambda: time.monotonic() - added > 2 * AGE, 3 * AGE, 0.2, what="age")
                assert len(acked) > acked_before
                stop.set()
                for t in threads:
                    t.join(120)
                closed_by_age = first.metric("kproxy_connections_closed_total", cause="max_age")
                closed_by_age += second.metric("kproxy_connections_closed_total", cause="max_age")
        finally:
            stop.set()
            for t in threads:
                t.join(120)
    assert not errors, errors[:3]
    assert closed_by_age > 0
    missing = set(acked) - set(read)
    assert not missing, sorted(missing)[:10]
    assert max(read.values()) == 1, [n for n, c in read.items() if c > 1][:10]
