"""Paired load generators: every path's client in one process, the paths taking turns in
short segments (``python -m bench.paired_workloads KIND ...``, run by `bench.paired`).

A round of `bench.harness` measures each path for seconds, one after another, and the
machine's neighbours change its speed from one minute to the next: a path's ratio to
direct then swings by more than the +-0.05 a target is judged to. Here each path's
client does ``--count`` messages split into ``--segments`` turns, the order of the paths
changed at every turn (`turn_order`), so that a slow minute falls on every path
alike and a round's ratio is the ratio of sums over many short, interleaved spells.

Kinds:

``latency``   one small produce at a time per turn (as `bench.workloads.latency`):
              every round trip's time, pooled per path.
``produce``   a turn is ``count / segments`` messages produced at full speed and
              flushed; a path's throughput is its messages over the sum of its turns.
``consume``   every path's consumer reads its pre-filled topic from the start, a turn
              of ``count / segments`` messages at a time: resumed, read, paused.
              librdkafka's pause stops the fetcher and drops what it had fetched
              ahead, and its resume fetches from the next message not yet consumed
              (librdkafka issue 2052), so a turn reads what it fetched. A turn is
              timed from its first batch, as `bench.workloads.consume` is.

Each prints one JSON object on its last stdout line: ``{path: result}``, each result
shaped as `bench.workloads` prints it, with ``turn_values`` (each turn's p99 or msg/s).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench.stats import percentile
from bench.workloads import CONSUMER_SETTINGS, QUIET, _payload, latency_summary

# A turn's clients are warmed once, before the first turn: connections and metadata.
WARMUP = 50


def turn_order(paths: list[str], turn: int) -> list[str]:
    """The paths in the order of turn `turn`, from a cycle of orders in which every path
    leads a turn as often as any other, follows every other path as often as any other,
    and never has two turns in a row.

    Rotated by one every turn instead (A B C, B C A, ...), each path always followed the
    same one, and what a turn leaves behind (a broker still busy, caches) fell on the
    same path every time: in one paired A/B run of produce-1KiB with the same code on
    both sides, the path that always followed the compiled build used 4% less CPU per
    message in every round, though not in a second run (docs/performance.md, "One
    request in flight"). Reversed every turn, the order gave the paths at its ends a
    second turn straight after their first at every other turn; in a trial on
    consume-1KiB those two paths, direct and one kproxy, read at 0.96-0.99 of each other
    while the two in the middle made 0.61, the turns then timed from the resume, its
    wait for the first batch included. Two paths simply alternate."""
    cycle = _turn_cycle(len(paths))
    return [paths[i] for i in cycle[turn % len(cycle)]]


@functools.cache
def _turn_cycle(n: int) -> tuple[tuple[int, ...], ...]:
    """The orders of `turn_order` for `n` paths: a Williams design (each order a row of a
    Latin square whose rows put every path right after every other once; for an odd `n`
    the rows and their mirrors, twice), its rows arranged so that no turn starts with
    the path that ended the turn before, the cycle's last and first turns included."""
    if n <= 2:
        return (tuple(range(n)),)
    first, low, high = [0], 1, n - 1
    while len(first) < n:
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    rows = [tuple((p + shift) % n for p in first) for shift in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    cycle = _chained(rows[:1], rows[1:])
    if cycle is None:
        raise ValueError(f"no order of turns for {n} paths without a path twice in a row")
    return tuple(cycle)


def _chained(
    chain: list[tuple[int, ...]], left: list[tuple[int, ...]]
) -> list[tuple[int, ...]] | None:
    """`chain` continued with every row of `left`, no row starting with the path the row
    before it ended with, the last row not ending with the path the first starts with."""
    if not left:
        return chain if chain[-1][-1] != chain[0][0] else None
    for i, row in enumerate(left):
        if row[0] != chain[-1][-1]:
            found = _chained([*chain, row], left[:i] + left[i + 1 :])
            if found is not None:
                return found
    return None


def _producers(targets: list[list[str]], conf: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A producer per path, and the list their delivery errors go to."""
    from confluent_kafka import Producer

    errors: list[str] = []

    def on_error(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    producers = {
        path: Producer({"bootstrap.servers": bootstrap, **conf, "on_delivery": on_error, **QUIET})
        for path, bootstrap, _topic in targets
    }
    return producers, errors


def _each_turn(
    args: argparse.Namespace, targets: list[list[str]], turn: Callable[[str, str, int], float]
) -> dict[str, list[float]]:
    """Run every path's turns in the alternating order; `turn(path, topic, n)` does n
    messages and returns what that turn measured."""
    topics = {path: topic for path, _bootstrap, topic in targets}
    paths = [path for path, _bootstrap, _topic in targets]
    per_turn = -(-args.count // args.segments)
    values: dict[str, list[float]] = {path: [] for path in paths}
    left = dict.fromkeys(paths, args.count)
    for segment in range(args.segments):
        for path in turn_order(paths, segment):
            n = min(per_turn, left[path])
            if n > 0:
                values[path].append(turn(path, topics[path], n))
                left[path] -= n
    return values


def latency(args: argparse.Namespace, targets: list[list[str]]) -> dict[str, Any]:
    producers, errors = _producers(targets, {"acks": args.acks, "linger.ms": 0})
    value = _payload(args.size)
    for path, _bootstrap, topic in targets:
        for _ in range(WARMUP):
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

    turns = _each_turn(args, targets, turn)
    if errors:
        raise RuntimeError(f"errors: {errors[:3]}")
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
    producers, errors = _producers(targets, conf)
    value = _payload(args.size)
    for path, _bootstrap, topic in targets:
        for _ in range(WARMUP):
            producers[path].produce(topic, value, partition=0)
        if producers[path].flush(60) != 0:
            raise RuntimeError(f"{path}: warm-up messages were not delivered")
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

    turns = _each_turn(args, targets, turn)
    if errors:
        raise RuntimeError(f"errors: {errors[:3]}")
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


def consume(args: argparse.Namespace, targets: list[list[str]]) -> dict[str, Any]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumers: dict[str, Any] = {}
    partitions: dict[str, list[Any]] = {}
    for path, bootstrap, topic in targets:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                **args.client_config,
                "group.id": f"bench-paired-{uuid.uuid4().hex}",
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
        read(path, WARMUP)
        consumers[path].pause(partitions[path])
    nbytes.update(dict.fromkeys(consumers, 0))
    timed_bytes: dict[str, int] = dict.fromkeys(consumers, 0)
    timed: dict[str, int] = dict.fromkeys(consumers, 0)
    waited: dict[str, float] = dict.fromkeys(consumers, 0.0)

    def turn(path: str, _topic: str, n: int) -> float:
        # Timed from the turn's first batch, as bench.workloads.consume times from its
        # first. A resumed partition is fetched only once librdkafka's broker thread next
        # wakes, up to ~0.5 s later whatever the path (its debug log: resumed at .218,
        # "is fetchable" at .695); that wait is kept apart (first_batch_seconds).
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

    turns = _each_turn(args, targets, turn)
    for consumer in consumers.values():
        consumer.close()
    return {
        path: {
            "messages": args.count,
            "bytes": nbytes[path],
            "measured_messages": timed[path],
            "first_batch_seconds": round(waited[path], 3),
            "seconds": took,
            "msg_per_s": timed[path] / took,
            "mb_per_s": timed_bytes[path] / took / 1e6,
            "turn_values": turns[path],
        }
        for path, took in seconds.items()
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.paired_workloads")
    p.add_argument("kind", choices=("latency", "produce", "consume"))
    p.add_argument(
        "--targets", required=True, type=json.loads, help="JSON [[path, bootstrap, topic], ...]"
    )
    p.add_argument("--count", type=int, required=True, help="messages per path")
    p.add_argument("--segments", type=int, required=True, help="turns per path")
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--acks", default="all")
    p.add_argument("--linger-ms", type=int, default=5)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for the whole run")
    p.add_argument(
        "--client-config", type=json.loads, default={}, help="JSON of further librdkafka settings"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run = {"latency": latency, "produce": produce, "consume": consume}[args.kind]
    sys.stdout.write(json.dumps(run(args, args.targets)) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
