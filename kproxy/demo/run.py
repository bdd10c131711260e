"""`kproxy demo`: a 3-broker cluster, kproxy in front of it, traffic and leader churn.

Runs with no Kafka of one's own: librdkafka's mock cluster (from the confluent-kafka
wheel, `pip install -e '.[demo]'`) runs inside this process on loopback ports. Its
brokers advertise names no client can resolve (`broker-N.demo.invalid`), so any client
that gets through is proof that kproxy rewrote every address. A producer and a consumer
move data through kproxy while the demo moves partition leaders every few seconds, and
kproxy's own view (leader changes, KIP-951 redirects) is printed as it goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import shlex
import tempfile
import threading
import time
from typing import Any

from kproxy.app import Running, Stop, run_loop, serve
from kproxy.config.settings import Settings, parse_config
from kproxy.protocol.hostport import format_host_port

log = logging.getLogger("kproxy.demo")

TOPIC = "kproxy-demo"
PARTITIONS = 6


class DemoStats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.produced = 0
        self.delivered = 0
        self.failed = 0
        self.consumed = 0
        self.leader_moves = 0


def demo_settings(
    bootstrap: str, overrides: dict[str, str], events_dir: str, port: int = 0
) -> Settings:
    """kproxy in front of the mock cluster on loopback: its bootstrap on `port` (0: one
    the OS chooses), its node ports and admin port chosen by the OS."""
    return parse_config(
        {
            "cluster": {"bootstrap_servers": bootstrap.split(","), "dial_overrides": overrides},
            "listeners": {
                "bind_host": "127.0.0.1",
                "advertised_host": "127.0.0.1",
                "bootstrap_port": port,
                "broker_port_base": 0,
            },
            "admin": {"bind_host": "127.0.0.1", "port": 0},
            "events": {"dir": events_dir},
            "shutdown": {"grace_seconds": 2},
        }
    )


def _producer_loop(bootstrap: str, stats: DemoStats, stop: threading.Event) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 20,
            "client.id": "kproxy-demo-producer",
        }
    )

    def delivered(err: Any, _msg: Any) -> None:
        with stats.lock:
            if err is None:
                stats.delivered += 1
            else:
                stats.failed += 1

    i = 0
    while not stop.is_set():
        try:
            producer.produce(
                TOPIC, key=str(i % 1000).encode(), value=b"demo-%d" % i, on_delivery=delivered
            )
            i += 1
            with stats.lock:
                stats.produced += 1
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
        if i % 200 == 0:
            time.sleep(0.02)  # a steady trickle, not a benchmark
    producer.flush(10)


def _consumer_loop(bootstrap: str, stats: DemoStats, stop: threading.Event) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kproxy-demo",
            "auto.offset.reset": "earliest",
            "client.id": "kproxy-demo-consumer",
        }
    )
    consumer.subscribe([TOPIC])
    try:
        while not stop.is_set():
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                with stats.lock:
                    stats.consumed += 1
    finally:
        consumer.close()


def _leader_mover(
    cluster: Any, brokers: int, interval: float, stats: DemoStats, stop: threading.Event
) -> None:
    rng = random.Random(7)
    while not stop.wait(interval):
        partition = rng.randrange(PARTITIONS)
        leader = rng.randint(1, brokers)
        cluster.set_leader(TOPIC, partition, leader)
        with stats.lock:
            stats.leader_moves += 1


async def _demo(
    settings: Settings,
    cluster: Any,
    stop_event: Stop,
    duration: float | None,
    brokers: int,
    leader_interval: float,
) -> int:
    stats = DemoStats()
    watched: list[Running] = []

    async def traffic(running: Running) -> None:
        """Runs while kproxy serves: clients, leader moves and a status line."""
        watched.append(running)
        loop = asyncio.get_running_loop()
        bootstrap = format_host_port(
            settings.listeners.advertised_host, running.proxy.bootstrap_port
        )
        print(f"kproxy demo: {brokers}-broker cluster (advertised as broker-N.demo.invalid)")
        print(f"kproxy demo: bootstrap address {bootstrap}")
        if running.admin is not None:
            admin = running.admin.url
            paths = " ".join(f"{admin}/{p}" for p in ("metrics", "topology", "readyz", "healthz"))
            print(f"kproxy demo: admin {paths}")
        print(
            f"kproxy demo: topic {TOPIC!r} ({PARTITIONS} partitions) is there; the demo "
            "cluster (librdkafka's mock) serves no CreateTopics, so other topics cannot be made"
        )
        print(
            "kproxy demo: the mock also sends a byte after each Metadata v13 response; kproxy "
            "keeps it from clients, and warns (kproxy_responses_trimmed_total)"
        )
        print(f"kproxy demo: moving a partition leader every {leader_interval:g}s; Ctrl-C stops")
        print(f"kproxy demo: try a client of your own: {client_command(bootstrap)}", flush=True)
        stop = threading.Event()
        threads = [
            threading.Thread(target=_producer_loop, args=(bootstrap, stats, stop), daemon=True),
            threading.Thread(target=_consumer_loop, args=(bootstrap, stats, stop), daemon=True),
            threading.Thread(
                target=_leader_mover,
                args=(cluster, brokers, leader_interval, stats, stop),
                daemon=True,
            ),
        ]
        for t in threads:
            t.start()
        started = loop.time()
        try:
            while not stop_event.is_set():
                remaining = None if duration is None else duration - (loop.time() - started)
                if remaining is not None and remaining <= 0:
                    break
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop_event.wait(), min(2.0, remaining or 2.0))
                _print_status(stats, running.observer)
        finally:
            stop.set()
            await loop.run_in_executor(None, _join_all, threads)
            stop_event.set()

    await serve(settings, stop_event, traffic)
    _print_status(stats, watched[0].observer if watched else None)
    with stats.lock:
        ok = stats.delivered > 0 and stats.consumed > 0
    print("kproxy demo: done" if ok else "kproxy demo: no data moved through kproxy")
    return 0 if ok else 1


def _join_all(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.join(15)


def _print_status(stats: DemoStats, observer: Any) -> None:
    with stats.lock:
        line = (
            f"produced {stats.produced} delivered {stats.delivered} consumed {stats.consumed} "
            f"leader moves {stats.leader_moves}"
        )
    if observer is not None and hasattr(observer, "summary"):
        line += " | kproxy saw " + observer.summary()
    print(line, flush=True)


def client_command(bootstrap: str) -> str:
    """A command to paste into another terminal: a consumer of the demo's topic through
    kproxy (confluent-kafka comes with the demo extra)."""
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": "try-kproxy",
        "auto.offset.reset": "earliest",
    }
    # Double quotes inside (JSON's), so that the shell's single quotes hold it as it is.
    code = (
        f"from confluent_kafka import Consumer; c = Consumer({json.dumps(config)}); "
        f"c.subscribe([{json.dumps(TOPIC)}]); "
        'print(len(c.consume(10, 10)), "messages read through kproxy"); c.close()'
    )
    return f"python3 -c {shlex.quote(code)}"


def run_demo(duration: float | None, brokers: int, leader_interval: float, port: int = 0) -> int:
    from kproxy.demo.mockcluster import MockCluster

    logging.getLogger("kproxy").setLevel(logging.WARNING)
    with MockCluster(brokers=brokers) as cluster, tempfile.TemporaryDirectory() as events_dir:
        cluster.create_topic(TOPIC, PARTITIONS, min(3, brokers))
        overrides = cluster.advertise_invalid_names("demo.invalid")
        settings = demo_settings(cluster.bootstraps, overrides, events_dir, port)
        return run_loop(
            settings,
            lambda stop: _demo(settings, cluster, stop, duration, brokers, leader_interval),
        )


__all__ = ["client_command", "demo_settings", "run_demo"]
