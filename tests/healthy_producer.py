"""A confluent-kafka producer that keeps producing through kproxy on a thread of its
own while a test sends bad input: the connections kproxy must not disturb.
"""

from __future__ import annotations

import threading

from tests.peers.net import wait_until

TOPIC = "healthy"  # the topic it produces to: a test creates it


class HealthyProducer(threading.Thread):
    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.delivered = 0
        self.failed: list[object] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})

        def on_delivery(err: object, _msg: object) -> None:
            if err is None:
                self.delivered += 1
            else:
                self.failed.append(err)

        i = 0
        while not self.stop_event.is_set():
            try:
                producer.produce(TOPIC, b"%d" % i, on_delivery=on_delivery)
                i += 1
            except BufferError:
                pass
            producer.poll(0.001)
        producer.flush(10)

    def keeps_going(self, more: int = 200) -> None:
        target = self.delivered + more
        wait_until(lambda: self.delivered >= target, 30, what="the healthy producer to progress")
        assert not self.failed, self.failed[:3]
