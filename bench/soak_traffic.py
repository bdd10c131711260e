"""The soak's clients, in a process of their own (so that the harness's chaos and
sampling never share their interpreter): ``python -m bench.soak_traffic --bootstrap B
--topic T --seconds S ...``.

An idempotent producer (acks=all) sends ``--rate`` messages a second on a fixed
schedule; each message's value starts with its sequence number and the wall-clock time
it was due. A consumer in a group reads the topic from the beginning. Both go through
the bootstrap they are given (kproxy).

Every ``--window`` seconds a JSON line reports that window: produce latency (due to
acknowledgement, so a stall counts for every message it held back) and end-to-end
latency (due to consumed), as percentiles, and the counts. After ``--seconds`` the
producer flushes, the consumer reads until it has seen every acknowledged message (or
``--drain-seconds`` pass), and a last line gives the ledger (`Ledger.verdict`).
"""

from __future__ import annotations

import argparse
import functools
import json
import struct
import sys
import threading
import time
from typing import Any

from bench.schedule import send_on_schedule
from bench.stats import percentile

_HEADER = struct.Struct(">Qd")  # sequence number, wall-clock time it was due


class Ledger:
    """Which sequence numbers were acknowledged, and how often each was read.

    A consumer may read a record twice without the log holding it twice (a rebalance
    or a coordinator move resumes it from its last committed offset): a record is
    counted once per (partition, offset), and only a second offset carrying the same
    sequence number is a duplicate in the log, which idempotence must prevent."""

    def __init__(self) -> None:
        self.acked = bytearray()
        self.read = bytearray()  # times read at a new offset, saturating at 255
        self.next_offset: dict[int, int] = {}  # partition -> next offset not read yet
        self.reread = 0  # records read again at an offset already read
        self.failed = 0
        self.unread = 0  # acknowledged and not read yet: kept as they come, read often

    @staticmethod
    def _grow(array: bytearray, seq: int) -> None:
        if seq >= len(array):
            array.extend(bytes(max(seq + 1 - len(array), 1 << 16)))

    def acknowledge(self, seq: int) -> None:
        self._grow(self.acked, seq)
        if not self.acked[seq]:
            self.acked[seq] = 1
            if seq >= len(self.read) or not self.read[seq]:
                self.unread += 1

    def consume(self, partition: int, offset: int, seq: int) -> None:
        if offset < self.next_offset.get(partition, 0):
            self.reread += 1
            return
        self.next_offset[partition] = offset + 1
        self._grow(self.read, seq)
        if not self.read[seq] and seq < len(self.acked) and self.acked[seq]:
            self.unread -= 1
        self.read[seq] = min(255, self.read[seq] + 1)

    def verdict(self) -> dict[str, int]:
        read = self.read
        return {
            "acknowledged": sum(self.acked),
            "failed": self.failed,
            "lost": self.unread,
            "duplicated": sum(1 for n in read if n > 1),
            "read_unacknowledged": sum(
                1
                for seq, n in enumerate(read)
                if n and (seq >= len(self.acked) or not self.acked[seq])
            ),
            "reread": self.reread,
        }


def window_summary(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "p50": None, "p99": None, "p999": None, "max": None}
    return {
        "n": len(values),
        "p50": percentile(values, 50),
        "p99": percentile(values, 99),
        "p999": percentile(values, 99.9),
        "max": max(values),
    }


class Traffic:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ledger = Ledger()
        self.lock = threading.Lock()
        self.produce_ms: list[float] = []
        self.end_to_end_ms: list[float] = []
        self.producing = threading.Event()
        self.consuming = threading.Event()
        self.errors: list[str] = []

    def take_window(self) -> dict[str, Any]:
        with self.lock:
            produce, self.produce_ms = self.produce_ms, []
            e2e, self.end_to_end_ms = self.end_to_end_ms, []
            failed = self.ledger.failed
        return {
            "produce_ms": window_summary(produce),
            "end_to_end_ms": window_summary(e2e),
            "failed_so_far": failed,
            "errors": self.errors[-3:],
        }

    def produce(self) -> None:
        from confluent_kafka import Producer

        args = self.args
        producer = Producer(
            {
                "bootstrap.servers": args.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "client.id": "soak-producer",
                "log_level": 3,
            }
        )
        padding = bytes(max(0, args.size - _HEADER.size))
        wall_offset = time.time() - time.perf_counter()  # a due time on the wall clock

        def acknowledged(seq: int, due: float, err: Any, _msg: Any) -> None:
            took = (time.perf_counter() - due) * 1000.0
            with self.lock:
                if err is None:
                    self.ledger.acknowledge(seq)
                    self.produce_ms.append(took)
                else:
                    self.ledger.failed += 1
                    self.errors.append(str(err))

        def send(seq: int, due: float) -> None:
            value = _HEADER.pack(seq, due + wall_offset) + padding
            producer.produce(
                args.topic, value, on_delivery=functools.partial(acknowledged, seq, due)
            )

        # Due in [0, seconds).
        send_on_schedule(producer, round(args.seconds * args.rate), args.rate, send)
        left = producer.flush(args.drain_seconds)
        if left:
            self.errors.append(f"{left} messages undelivered after the flush")
        self.producing.set()

    def consume(self) -> None:
        from confluent_kafka import Consumer

        args = self.args
        consumer = Consumer(
            {
                "bootstrap.servers": args.bootstrap,
                "group.id": f"soak-{args.topic}",
                "auto.offset.reset": "earliest",
                "client.id": "soak-consumer",
                "log_level": 3,
            }
        )
        consumer.subscribe([args.topic])
        deadline: float | None = None
        try:
            while True:
                if self.producing.is_set():
                    if deadline is None:
                        deadline = time.monotonic() + args.drain_seconds
                    with self.lock:
                        done = self.ledger.unread == 0
                    if done or time.monotonic() > deadline:
                        return
                for msg in consumer.consume(500, 0.5):
                    value, partition, offset = msg.value(), msg.partition(), msg.offset()
                    if msg.error() is not None or value is None:
                        continue
                    assert partition is not None and offset is not None  # a record has both
                    seq, due = _HEADER.unpack_from(value)
                    took = (time.time() - due) * 1000.0
                    with self.lock:
                        self.ledger.consume(partition, offset, seq)
                        self.end_to_end_ms.append(took)
        finally:
            consumer.close()
            self.consuming.set()


def run(args: argparse.Namespace) -> dict[str, Any]:
    traffic = Traffic(args)
    threads = [
        threading.Thread(target=traffic.consume, daemon=True),
        threading.Thread(target=traffic.produce, daemon=True),
    ]
    for thread in threads:
        thread.start()
    start = time.monotonic()
    index = 0
    while not traffic.producing.wait(
        max(0.0, start + (index + 1) * args.window - time.monotonic())
    ):
        print(json.dumps({"window": index, **traffic.take_window()}), flush=True)
        index += 1
    traffic.consuming.wait()
    tail = traffic.take_window()
    with traffic.lock:
        verdict = traffic.ledger.verdict()
    return {"final": verdict, "tail": tail, "errors": traffic.errors[:5]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak_traffic")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--rate", type=float, default=1000.0, help="messages a second")
    p.add_argument("--size", type=int, default=1024, help="bytes a message")
    p.add_argument("--window", type=float, default=300.0, help="seconds a reported window")
    p.add_argument("--drain-seconds", type=float, default=120.0)
    result = run(p.parse_args(argv))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
