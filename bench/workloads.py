"""Load generators, each run in its own process: ``python -m bench.workloads KIND ...``.

Each prints one JSON object on its last stdout line. The harness runs them as
subprocesses so that the client's CPU is not shared with the harness and so that no
client state leaks between runs.

Kinds:

``produce``   confluent-kafka producer, ``--count`` messages of ``--size`` bytes with
              ``--acks``; throughput from the first produce() to flush() returning.
``consume``   confluent-kafka consumer on an assigned, pre-filled topic from the
              beginning (no group: Tansu's JoinGroup waits half the session timeout;
              ``CONSUMER_SETTINGS``);
              throughput from the first batch received to the ``--count``-th message.
``latency``   one small produce at a time (acks=1 by default): produce, flush, repeat;
              the round-trip time of each.
``idle``      open ``--count`` connections, send one ApiVersions v0 on each and read its
              answer (so that a proxy has dialled the broker for every one of them), print
              a JSON line, then hold them all, idle, until stdin is closed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import struct
import sys
import time
import uuid
from typing import Any

from bench.stats import percentile

QUIET = {"log_level": 3}

#: What every benchmark consumer sets beyond librdkafka's defaults. Once a partition's
#: local queue holds queued.max.messages.kbytes (64 MiB) or queued.min.messages,
#: librdkafka holds back its next Fetch for fetch.queue.backoff.ms, a second by default:
#: a path that fetches faster than the application takes messages stalls a second at a
#: time, and only the fastest path does. Direct on Apache Kafka read 150-360k msg/s, a
#: third of what it read through any proxy (bench/hotpath at 9c39d7c: 2.0-3.0x "of
#: direct"); with 10 ms, 0.74-1.06M, and the proxies 0.75 of that.
CONSUMER_SETTINGS: dict[str, Any] = {"fetch.queue.backoff.ms": 10}


def _payload(size: int) -> bytes:
    # Incompressible (no compression is configured anyway) and the same for every path.
    return (os.urandom(64) * (size // 64 + 1))[:size]


def produce(args: argparse.Namespace) -> dict[str, Any]:
    from confluent_kafka import Producer

    errors: list[str] = []

    def on_error(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    conf: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        **args.client_config,
        "acks": args.acks,
        "linger.ms": args.linger_ms,
        "delivery.report.only.error": True,
        "on_delivery": on_error,
        "message.max.bytes": max(1_000_000, args.size * 2),
        **QUIET,
    }
    producer = Producer(conf)
    value = _payload(args.size)
    # Warm-up: connections, metadata, the first batch.
    for _ in range(args.warmup):
        producer.produce(args.topic, value, partition=args.partition)
    if producer.flush(60) != 0:
        raise RuntimeError("warm-up messages were not delivered")
    if errors:
        raise RuntimeError(f"warm-up failed: {errors[:3]}")
    produce_ = producer.produce
    poll = producer.poll
    topic = args.topic
    partition = args.partition
    started = time.perf_counter()
    for _ in range(args.count):
        while True:
            try:
                produce_(topic, value, partition=partition)
                break
            except BufferError:
                poll(0.005)
    remaining = producer.flush(300)
    seconds = time.perf_counter() - started
    if remaining or errors:
        raise RuntimeError(f"{remaining} undelivered, errors: {errors[:3]}")
    return {
        "messages": args.count,
        "bytes": args.count * args.size,
        "seconds": seconds,
        "msg_per_s": args.count / seconds,
        "mb_per_s": args.count * args.size / seconds / 1e6,
    }


def consume(args: argparse.Namespace) -> dict[str, Any]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            **args.client_config,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **CONSUMER_SETTINGS,
            **QUIET,
        }
    )
    consumer.assign(
        [TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in range(args.partitions)]
    )
    got = 0
    nbytes = 0
    first_batch = 0
    first_bytes = 0
    started = 0.0
    deadline = time.monotonic() + args.timeout
    consume_ = consumer.consume
    while got < args.count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out with {got} of {args.count} messages")
        batch = consume_(10_000, 1.0)
        if not batch:
            continue
        for m in batch:
            if m.error() is not None:
                raise RuntimeError(str(m.error()))
            value = m.value()
            nbytes += len(value) if value is not None else 0
        got += len(batch)
        if not started:
            started = time.perf_counter()
            first_batch = got
            first_bytes = nbytes
    seconds = time.perf_counter() - started
    consumer.close()
    measured = got - first_batch
    mbytes = nbytes - first_bytes
    return {
        "messages": got,
        "bytes": nbytes,
        "measured_messages": measured,
        "seconds": seconds,
        "msg_per_s": steady_rate(measured, seconds),
        "mb_per_s": steady_rate(mbytes / 1e6, seconds),
    }


def steady_rate(count: float, seconds: float) -> float | None:
    """``count`` a second over ``seconds``, what a consumer moved after its first batch;
    None when nothing was left to time. librdkafka fetches ahead while the first
    `consume` call waits, so a short enough run gets every message in that first batch
    (8,000 messages of 1 KiB in small Fetch responses did): no rate, rather than 0."""
    return count / seconds if count > 0 and seconds > 0 else None


def latency(args: argparse.Namespace) -> dict[str, Any]:
    from confluent_kafka import Producer

    errors: list[str] = []

    def on_error(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            **args.client_config,
            "acks": args.acks,
            "linger.ms": 0,
            "on_delivery": on_error,
            **QUIET,
        }
    )
    value = _payload(args.size)
    for _ in range(args.warmup):
        producer.produce(args.topic, value, partition=args.partition)
        producer.flush(30)
    rtts: list[float] = []
    now = time.perf_counter
    for _ in range(args.count):
        t0 = now()
        producer.produce(args.topic, value, partition=args.partition)
        if producer.flush(30) != 0:
            raise RuntimeError("a message was not delivered within 30 s")
        rtts.append(now() - t0)
    if errors:
        raise RuntimeError(f"errors: {errors[:3]}")
    return latency_summary([r * 1000.0 for r in rtts], args.size)


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


def _api_versions_v0(correlation_id: int) -> bytes:
    client_id = b"kproxy-bench-idle"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


async def _open_idle(host: str, port: int, count: int, batch: int) -> list[asyncio.StreamWriter]:
    writers: list[asyncio.StreamWriter] = []

    async def one(i: int) -> asyncio.StreamWriter:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(_api_versions_v0(i + 1))
        await writer.drain()
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        await reader.readexactly(size)
        return writer

    for start in range(0, count, batch):
        got = await asyncio.gather(*(one(i) for i in range(start, min(count, start + batch))))
        writers.extend(got)
    return writers


def idle(args: argparse.Namespace) -> dict[str, Any]:
    host, _, port = args.bootstrap.split(",")[0].rpartition(":")

    async def main() -> dict[str, Any]:
        started = time.perf_counter()
        writers = await asyncio.wait_for(_open_idle(host, int(port), args.count, 100), args.timeout)
        opened = time.perf_counter() - started
        sys.stdout.write(json.dumps({"ready": True, "opened": len(writers),
                                     "open_seconds": opened}) + "\n")  # fmt: skip
        sys.stdout.flush()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # until the harness closes stdin
        alive = sum(1 for w in writers if not w.is_closing())
        for w in writers:
            w.close()
        return {"opened": len(writers), "open_seconds": opened, "alive_at_end": alive}

    return asyncio.run(main())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.workloads")
    sub = p.add_subparsers(dest="kind", required=True)
    for name in ("produce", "consume", "latency", "idle"):
        s = sub.add_parser(name)
        s.add_argument("--bootstrap", required=True)
        s.add_argument("--topic", required=True)
        s.add_argument("--size", type=int, default=1024)
        s.add_argument("--count", type=int, default=10_000)
        s.add_argument("--warmup", type=int, default=100)
        s.add_argument("--partition", type=int, default=-1)
        s.add_argument("--partitions", type=int, default=1)
        s.add_argument("--acks", default="all")
        s.add_argument("--linger-ms", type=int, default=5)
        s.add_argument("--timeout", type=float, default=120.0)
        s.add_argument(
            "--client-config",
            type=json.loads,
            default={},
            help="JSON object of further librdkafka settings (TLS: security.protocol...)",
        )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    kinds = {"produce": produce, "consume": consume, "latency": latency, "idle": idle}
    fn = kinds[args.kind]
    result = fn(args)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
