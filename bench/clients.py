"""The benchmark's load generators, run in a process of their own so that the client's
CPU is not the harness's and no client state leaks from one run to the next:
``python -m bench.clients KIND --targets '[[path, bootstrap, topic], ...]' ...``.

One client per target. With one target (`bench.harness`, `bench.generate.generator`) a
run is ``--count`` messages after a warm-up; with several (`bench.paired`) every path's
client runs in this one process and the paths take turns in short segments, the order
changed at every turn (`bench.turns`), so that a slow minute of the machine's neighbours
falls on every path alike and a round's ratio is the ratio of sums over many short,
interleaved spells (a round of paths measured one after another swings by more than
the +-0.05 a target is judged to).

Kinds:

``latency``   one small produce at a time (acks=1 by default): produce, flush, repeat;
              every round trip's time, pooled per path.
``produce``   ``--count`` messages at full speed, flushed at the end of each turn; a
              path's throughput is its messages over the sum of its turns.
``rate``      ``--rate`` messages a second, each due at its place in a fixed schedule;
              a message's latency runs from when it was due to its acknowledgement,
              so a stall counts for every message it held back (coordinated omission
              avoided, as OpenMessaging's benchmark does). Messages due are sent at
              each wakeup; between wakeups the client sleeps until the next is due.
``consume``   a consumer on an assigned, pre-filled partition 0 from the beginning (no
              group: Tansu's JoinGroup waits half the session timeout), ``--warmup``
              messages untimed, then ``--count`` a turn at a time: resumed, read,
              paused. librdkafka's pause stops the fetcher and drops what it had fetched
              ahead, and its resume fetches from the next message not yet consumed
              (librdkafka issue 2052), so a turn reads what it fetched. A turn is timed
              from its first batch (`steady_rate`).
``idle``      open ``--count`` connections to the first target, send one ApiVersions v0
              on each and read its answer (so that a proxy has dialled the broker for
              every one of them), print a JSON line, then hold them all, idle, until
              stdin is closed.

Each prints one JSON object on its last stdout line: ``{path: result}`` (``idle``: its
own figures), with ``turn_values`` (each turn's p99 or msg/s).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench.idle import idle
from bench.schedule import send_on_schedule
from bench.stats import percentile
from bench.turns import each_turn

# Every client is warmed once, before its first turn: connections, metadata, a batch.
WARMUP = 50
QUIET = {"log_level": 3}
#: What every benchmark consumer sets beyond librdkafka's defaults. Once a partition's
#: local queue holds queued.max.messages.kbytes (64 MiB) or queued.min.messages,
#: librdkafka holds back its next Fetch for fetch.queue.backoff.ms, a second by default:
#: a path that fetches faster than the application takes messages stalls a second at a
#: time, and only the fastest path does (direct on Apache Kafka read a third of what it
#: read through any proxy); with 10 ms every path reads at its own pace.
CONSUMER_SETTINGS: dict[str, Any] = {"fetch.queue.backoff.ms": 10}


def _payload(size: int) -> bytes:
    # Incompressible (no compression is configured anyway) and the same for every path.
    return (os.urandom(64) * (size // 64 + 1))[:size]


def latency_summary(ms: list[float], size: int) -> dict[str, Any]:
    """Round trips of ``size`` bytes each, in ms: their count, bytes and percentiles."""
    return {
        "messages": len(ms),
        "bytes": len(ms) * size,
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "p999_ms": percentile(ms, 99.9),
        "max_ms": max(ms),
        "mean_ms": sum(ms) / len(ms),
    }


def steady_rate(count: float, seconds: float) -> float | None:
    """``count`` a second over ``seconds``, what a consumer moved after its first batch;
    None when nothing was left to time. librdkafka fetches ahead while the first
    `consume` call waits, so a short enough run gets every message in that first batch
    (8,000 messages of 1 KiB in small Fetch responses did): no rate, rather than 0."""
    return count / seconds if count > 0 and seconds > 0 else None


def _producers(
    args: argparse.Namespace, targets: list[list[str]], conf: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """A producer per path, and the list their delivery errors go to."""
    from confluent_kafka import Producer

    errors: list[str] = []

    def on_error(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    producers = {
        path: Producer(
            {
                "bootstrap.servers": bootstrap,
                **args.client_config,
                **conf,
                "on_delivery": on_error,
                **QUIET,
            }
        )
        for path, bootstrap, _topic in targets
    }
    return producers, errors


def _warmed_producers(
    args: argparse.Namespace, targets: list[list[str]], conf: dict[str, Any]
) -> tuple[dict[str, Any], list[str], bytes]:
    """`_producers`, each having delivered ``--warmup`` messages; and the payload."""
    producers, errors = _producers(args, targets, conf)
    value = _payload(args.size)
    for path, _bootstrap, topic in targets:
        for _ in range(args.warmup):
            producers[path].produce(topic, value, partition=0)
        if producers[path].flush(60) != 0:
            raise RuntimeError(f"{path}: warm-up messages were not delivered")
    return producers, errors, value


def _producer_turns(
    args: argparse.Namespace,
    targets: list[list[str]],
    turn: Callable[[str, str, int], float],
    errors: list[str],
) -> dict[str, list[float]]:
    """`each_turn`, then the first delivery errors raised, if any."""
    turns = each_turn(args, targets, turn)
    if errors:
        raise RuntimeError(f"errors: {errors[:3]}")
    return turns


def latency(args: argparse.Namespace, targets: list[list[str]]) -> dict[str, Any]:
    producers, errors = _producers(args, targets, {"acks": args.acks, "linger.ms": 0})
    value = _payload(args.size)
    for path, _bootstrap, topic in targets:
        for _ in range(args.warmup):
            producers[path].produce(topic, value, partition=0)
            producers[path].flush(30)
    rtts: dict[str, list[float]] = {path: [] for path, _b, _t in targets}
    now = time.perf_counter

    def turn(path: str, topic: str, n: int) -> float:
        producer = producers[path]
        out: list[float] = []
        for _ in range(n):
            t0 = now()
            producer.produce(topic, value, partition=0)
            if producer.flush(30) != 0:
                raise RuntimeError(f"{path}: a message was not delivered within 30 s")
            out.append((now() - t0) * 1000.0)
        rtts[path].extend(out)
        return percentile(out, 99)

    turns = _producer_turns(args, targets, turn, errors)
    return {
        path: {**latency_summary(ms, args.size), "turn_values": turns[path]}
        for path, ms in rtts.items()
    }


def produce(args: argparse.Namespace, targets: list[list[str]]) -> dict[str, Any]:
    conf = {
        "acks": args.acks,
        "linger.ms": args.linger_ms,
        "delivery.report.only.error": True,
        "message.max.bytes": max(1_000_000, args.size * 2),
    }
    producers, errors, value = _warmed_producers(args, targets, conf)
    seconds: dict[str, float] = {path: 0.0 for path, _b, _t in targets}

    def turn(path: str, topic: str, n: int) -> float:
        producer = producers[path]
        produce_ = producer.produce
        started = time.perf_counter()
        for _ in range(n):
            while True:
                try:
                    produce_(topic, value, partition=0)
                    break
                except BufferError:
                    producer.poll(0.005)
        if producer.flush(300):
            raise RuntimeError(f"{path}: messages undelivered after 300 s")
        took = time.perf_counter() - started
        seconds[path] += took
        return n / took

    turns = _producer_turns(args, targets, turn, errors)
    return {
        path: {
            "messages": args.count,
            "bytes": args.count * args.size,
            "seconds": took,
            "msg_per_s": args.count / took,
            "mb_per_s": args.count * args.size / took / 1e6,
            "turn_values": turns[path],
        }
        for path, took in seconds.items()
    }


def rate(args: argparse.Namespace, targets: list[list[str]]) -> dict[str, Any]:
    conf = {"acks": args.acks, "linger.ms": args.linger_ms}
    producers, errors, value = _warmed_producers(args, targets, conf)
    late: dict[str, list[float]] = {path: [] for path, _b, _t in targets}
    seconds: dict[str, float] = dict.fromkeys(late, 0.0)
    now = time.perf_counter

    def turn(path: str, topic: str, n: int) -> float:
        producer = producers[path]
        out: list[float] = []

        def acknowledged(due: float, err: Any, _msg: Any) -> None:
            if err is None:
                out.append((now() - due) * 1000.0)
            else:
                errors.append(str(err))

        def send(_i: int, due: float) -> None:
            producer.produce(
                topic, value, partition=0, on_delivery=functools.partial(acknowledged, due)
            )

        start = send_on_schedule(producer, n, args.rate, send)
        if producer.flush(120):
            raise RuntimeError(f"{path}: messages undelivered after 120 s")
        seconds[path] += now() - start
        late[path].extend(out)
        return percentile(out, 99)

    turns = _producer_turns(args, targets, turn, errors)
    return {
        path: {
            **latency_summary(ms, args.size),
            "offered_msg_per_s": args.rate,
            "msg_per_s": len(ms) / seconds[path],
            "mb_per_s": len(ms) * args.size / seconds[path] / 1e6,
            "turn_values": turns[path],
        }
        for path, ms in late.items()
    }


def consume(args: argparse.Namespace, targets: list[list[str]]) -> dict[str, Any]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumers: dict[str, Any] = {}
    partitions: dict[str, list[Any]] = {}
    for path, bootstrap, topic in targets:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                **args.client_config,
                "group.id": f"bench-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                **CONSUMER_SETTINGS,
                **QUIET,
            }
        )
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        consumers[path] = consumer
        partitions[path] = consumer.assignment()
    deadline = time.monotonic() + args.timeout
    nbytes: dict[str, int] = dict.fromkeys(consumers, 0)
    next_offset: dict[str, int] = dict.fromkeys(consumers, 0)  # each topic is read from 0
    seconds: dict[str, float] = dict.fromkeys(consumers, 0.0)

    def read(path: str, n: int, first_batch: bool = False) -> int:
        """Read n messages (with `first_batch`, only the first batch that comes, at
        most n): how many were read. Never more than n: a pause keeps the position of
        the last message consumed."""
        consumer, got = consumers[path], 0
        while got < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path}: timed out with {got} of {n} messages")
            for m in consumer.consume(min(10_000, n - got), 1.0):
                if m.error() is not None:
                    raise RuntimeError(f"{path}: {m.error()}")
                if m.offset() != next_offset[path]:
                    # A turn must read on from where the last one paused, no more, no less.
                    raise RuntimeError(
                        f"{path}: offset {m.offset()} read where {next_offset[path]} was next"
                    )
                next_offset[path] += 1
                value = m.value()
                nbytes[path] += len(value) if value is not None else 0
                got += 1
            if first_batch and got:
                break
        return got

    for path in consumers:  # warm-up (connections, metadata), then paused until its turn
        if args.warmup:
            read(path, args.warmup)
        consumers[path].pause(partitions[path])
    nbytes.update(dict.fromkeys(consumers, 0))
    timed_bytes: dict[str, int] = dict.fromkeys(consumers, 0)
    timed: dict[str, int] = dict.fromkeys(consumers, 0)
    waited: dict[str, float] = dict.fromkeys(consumers, 0.0)

    def turn(path: str, _topic: str, n: int) -> float:
        # Timed from the turn's first batch. A resumed partition is fetched only once
        # librdkafka's broker thread next wakes, up to ~0.5 s later whatever the path
        # (its debug log: resumed at .218, "is fetchable" at .695); that wait is kept
        # apart (first_batch_seconds).
        resumed = time.perf_counter()
        consumers[path].resume(partitions[path])
        first = read(path, n, first_batch=True)
        started, before = time.perf_counter(), nbytes[path]
        waited[path] += started - resumed
        read(path, n - first)
        took = time.perf_counter() - started
        consumers[path].pause(partitions[path])
        seconds[path] += took
        timed[path] += n - first
        timed_bytes[path] += nbytes[path] - before
        return (n - first) / took if took > 0 else 0.0

    turns = each_turn(args, targets, turn)
    for consumer in consumers.values():
        consumer.close()
    return {
        path: {
            "messages": args.count,
            "bytes": nbytes[path],
            "measured_messages": timed[path],
            "first_batch_seconds": round(waited[path], 3),
            "seconds": took,
            "msg_per_s": steady_rate(timed[path], took),
            "mb_per_s": steady_rate(timed_bytes[path] / 1e6, took),
            "turn_values": turns[path],
        }
        for path, took in seconds.items()
    }


KINDS: dict[str, Callable[[argparse.Namespace, list[list[str]]], dict[str, Any]]] = {
    "latency": latency,
    "produce": produce,
    "rate": rate,
    "consume": consume,
    "idle": idle,
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.clients")
    p.add_argument("kind", choices=KINDS)
    p.add_argument(
        "--targets", required=True, type=json.loads, help="JSON [[path, bootstrap, topic], ...]"
    )
    p.add_argument("--count", type=int, required=True, help="messages (idle: connections)")
    p.add_argument("--segments", type=int, default=1, help="turns per path")
    p.add_argument("--warmup", type=int, default=WARMUP, help="messages before the first turn")
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--acks", default="all")
    p.add_argument("--linger-ms", type=int, default=5)
    p.add_argument("--rate", type=float, default=1000.0, help="rate: messages a second")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for the whole run")
    p.add_argument(
        "--client-config", type=json.loads, default={}, help="JSON of further librdkafka settings"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    sys.stdout.write(json.dumps(KINDS[args.kind](args, args.targets)) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
