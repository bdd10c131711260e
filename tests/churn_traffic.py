"""Client traffic through kproxy during a leader-churn run, shared by the tests that churn.

A confluent-kafka producer writes to every partition and a consumer reads, both through
kproxy, on a thread of their own, while the test moves leaders on the mock cluster.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.kproxy_process import KproxyProcess
from tests.peers.net import wait_until


@contextlib.contextmanager
def churn_traffic(bootstrap: str, topic: str, partitions: int, name: str) -> Iterator[Counter[int]]:
    """Run the traffic; yields deliveries per partition once every partition has one.

    On leaving, the traffic stops, the producer flushes and both clients close (so that
    their connections through kproxy end).
    """
    from confluent_kafka import Consumer, Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "client.id": f"{name}-producer"}
    )
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": name,
            "auto.offset.reset": "earliest",
            "client.id": f"{name}-consumer",
        }
    )
    consumer.subscribe([topic])
    stop = threading.Event()
    delivered = Counter[int]()

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            delivered.update([msg.partition()])

    def traffic(prod: Any) -> None:
        i = 0
        while not stop.is_set():
            for p in range(partitions):
                with contextlib.suppress(BufferError):
                    prod.produce(topic, b"%d" % i, partition=p, on_delivery=on_delivery)
            i += 1
            prod.poll(0.005)
            consumer.poll(0)

    # The producer goes to the thread as an argument, not a closure, so that `del` below
    # drops the last reference and librdkafka closes its connections.
    worker = threading.Thread(target=traffic, args=(producer,), daemon=True)
    worker.start()
    try:
        wait_until(lambda: len(delivered) == partitions, 30, what="traffic on every partition")
        yield delivered
    finally:
        stop.set()
        worker.join(30)
        producer.flush(30)
        del producer  # librdkafka closes its connections when the handle goes
        consumer.close()


def topology_leaders(kp: KproxyProcess, topic: str) -> dict[int, tuple[int, int]]:
    """kproxy's /topology for ``topic``: partition -> (leader, leader epoch)."""
    return {
        r["partition"]: (r["leader"], r["leader_epoch"])
        for r in kp.topology()["partitions"]
        if r["topic"] == topic
    }


def read_event_files(directory: Path) -> list[dict[str, Any]]:
    """Every line of kproxy's event log files in ``directory``, in file order; a line
    that is not JSON fails the test."""
    events: list[dict[str, Any]] = []
    for path in sorted(directory.glob("events-*.jsonl")):
        events.extend(json.loads(line) for line in path.read_text().splitlines())
    return events
