"""The Kafka event sink with its cluster down: does the proxy's own traffic notice?

    python -m bench.event_sink_fault [--rounds 3] [--messages 20000]

A single-node Apache Kafka carries the traffic, another holds the events topic
(tests/peers). kproxy sits in front of the first with `events.sink: kafka` pointed at
the second and every request sampled (`request_sample_rate: 1`, an event per request:
the heaviest event load kproxy can make). Rounds alternate, in one run, between the
events cluster up and stopped; each round produces `--messages` 1 KiB records through
kproxy with confluent-kafka (acks=all, linger 5 ms) and records the throughput and
kproxy's CPU seconds (/proc). The result (medians per state, their ratio, events
dropped) is printed as JSON and written to bench/event_sink_fault.json. Not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster

RESULTS = Path(__file__).resolve().parent / "event_sink_fault.json"
PAYLOAD = b"x" * 1024


def produce(bootstrap: str, topic: str, count: int) -> float:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    started = time.monotonic()
    sent = 0
    while sent < count:
        try:
            producer.produce(topic, PAYLOAD)
            sent += 1
        except BufferError:
            producer.poll(0.01)
    assert producer.flush(120) == 0
    return count / (time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.event_sink_fault")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--messages", type=int, default=20000)
    args = p.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        KafkaCluster(nodes=1, heap="512m") as data,
        KafkaCluster(nodes=1, heap="256m") as events,
    ):
        data.create_topic("traffic", 1, 1)
        kp = KproxyProcess(
            Path(tmp),
            data.external_bootstrap.split(","),
            cluster={"dial_overrides": data.dial_overrides},
            events={
                "sink": "kafka",
                "request_sample_rate": 1.0,
                "kafka": {
                    "bootstrap_servers": events.internal_bootstrap,
                    "partitions": 1,
                    "message_timeout_seconds": 5,
                },
            },
        )
        with kp:
            produce(kp.bootstrap, "traffic", 2000)  # warm up
            for r in range(args.rounds * 2):
                up = r % 2 == 0
                if up:
                    events.start_node(1, in_sync=False)
                else:
                    events.stop_node(1)
                cpu = kp.cpu_seconds()
                rate = produce(kp.bootstrap, "traffic", args.messages)
                rows.append(
                    {
                        "events_cluster": "up" if up else "down",
                        "msgs_per_s": round(rate),
                        "kproxy_cpu_s": round(kp.cpu_seconds() - cpu, 2),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
            dropped = kp.metric("kproxy_events_dropped_total", sink="kafka")
    up = [r["msgs_per_s"] for r in rows if r["events_cluster"] == "up"]
    down = [r["msgs_per_s"] for r in rows if r["events_cluster"] == "down"]
    result = {
        "rounds": rows,
        "median_up": statistics.median(up),
        "median_down": statistics.median(down),
        "down_over_up": round(statistics.median(down) / statistics.median(up), 3),
        "spread_up": [min(up), max(up)],
        "events_dropped": dropped,
    }
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
