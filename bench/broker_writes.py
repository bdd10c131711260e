"""What Apache Kafka's appends cost from one run to the next, with no proxy in the path
(``python -m bench broker-writes``).

A Kafka broker appends what producers send to its log files through the page cache. On
the benchmark machines that append sometimes costs several times as much for minutes
at a time: the broker's system time per 1 KiB message goes from about 0.7 us to about
3 us, most of it (53% of the broker's samples under ``perf record``, against 18%) in
``copy_folio_from_iter_atomic``, the kernel's copy of the appended bytes into the page
cache, and its CPU per message doubles from one run to the next in the same JVM. In
``kafka-produce-1KiB`` every path measured in such a spell is slowed alike, so a
round's ratios to direct swing with it.

This command measures the broker alone, so that a spell can be told from a proxy's
cost: direct, ``--runs`` times in a row, confluent-kafka producing ``--count`` 1 KiB
messages with acks=all to a fresh topic, each topic deleted after its run as the
harness deletes a round's. For each run it prints the messages a second and the
broker's user and system CPU per message.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from bench.generate import generator
from bench.kafka_upstream import KafkaUpstream
from bench.procfs import CpuSince
from kproxy.cli import _positive_int as positive_int


def one_run(up: KafkaUpstream, pid: int, topic: str, count: int) -> dict[str, Any]:
    up.create_topic(topic, 1, "direct")
    try:
        cpu = CpuSince(pid)
        result = generator("produce", up.direct_bootstrap(), topic, 600, size=1024,
                            count=count, acks="all", partition=0)  # fmt: skip
        user, system = cpu.spent()
    finally:
        up.drop_topics([topic])
    return {
        "msg_per_s": round(result["msg_per_s"]),
        "broker_user_us_per_msg": round(user / count * 1e6, 2),
        "broker_system_us_per_msg": round(system / count * 1e6, 2),
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=positive_int, default=8, help="runs in a row (default 8)")
    p.add_argument(
        "--count", type=positive_int, default=600_000, help="messages a run (default 600,000)"
    )
    p.add_argument("--out", type=Path, default=None, help="also write the runs here as JSON")


def main_broker_writes(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="kproxy-broker-writes-") as workdir:
        up = KafkaUpstream(Path(workdir))
        up.start()
        try:
            process = up.cluster.nodes[1].process
            assert process is not None and process.pid is not None
            runs = []
            print("run  msg/s      broker user us/msg  system us/msg")
            for i in range(args.runs):
                run = one_run(up, process.pid, f"broker-writes-{i}", args.count)
                runs.append(run)
                user, system = run["broker_user_us_per_msg"], run["broker_system_us_per_msg"]
                print(f"{i:3}  {run['msg_per_s']:9,}  {user:18.2f}  {system:13.2f}")
        finally:
            up.stop()
    if args.out is not None:
        args.out.write_text(json.dumps(runs, indent=1) + "\n")
    return 0
