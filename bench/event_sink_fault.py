"""The Kafka event sink with its cluster down: does the proxy's own traffic notice?

    python -m bench.event_sink_fault [--rounds 3] [--seconds 8]

A single-node Apache Kafka carries the traffic, another holds the events topic
(tests/peers). kproxy sits in front of the first with `events.sink: kafka` pointed at
the second and every request sampled (`request_sample_rate: 1`, an event per request:
the heaviest event load kproxy can make). Rounds alternate, in one run, between the
events cluster up and stopped; each round writes 1 KiB records for `--seconds` through
kproxy with confluent-kafka (acks=all, at most 10 records a request: many requests, so
many events) and records the throughput, the Produce requests kproxy forwarded and its CPU seconds
(/proc) per thousand of them. The result (medians per state, their ratio, events
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


def produce(bootstrap: str, topic: str, seconds: float) -> float:
    """Records acknowledged per second over `seconds` of writing, in batches of at most
    ten records: many small requests, so an event for each of many requests."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 0,
            "batch.num.messages": 10,
            "acks": "all",
        }
    )
    acked = [0]

    def delivered(err: object, msg: object) -> None:
        if err is None:
            acked[0] += 1

    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            producer.produce(topic, PAYLOAD, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    assert producer.flush(120) == 0
    return acked[0] / (time.monotonic() - started)


def produce_requests(kp: KproxyProcess) -> float:
    return kp.metric("kproxy_frames_total", api="Produce", direction="request")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.event_sink_fault")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=8.0, help="per round")
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
            produce(kp.bootstrap, "traffic", args.seconds)  # warm up (the brokers' JIT)
            for r in range(args.rounds * 2):
                events_up = r % 2 == 0
                if events_up:
                    events.start_node(1, in_sync=False)
                else:
                    events.stop_node(1)
                cpu, requests = kp.cpu_seconds(), produce_requests(kp)
                rate = produce(kp.bootstrap, "traffic", args.seconds)
                cpu, requests = kp.cpu_seconds() - cpu, produce_requests(kp) - requests
                rows.append(
                    {
                        "events_cluster": "up" if events_up else "down",
                        "msgs_per_s": round(rate),
                        "produce_requests": int(requests),
                        "kproxy_cpu_s": round(cpu, 2),
                        "kproxy_cpu_ms_per_1k_requests": round(1e6 * cpu / max(requests, 1), 1),
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
        "spread_down": [min(down), max(down)],
        "cpu_ms_per_1k_requests_up": statistics.median(
            r["kproxy_cpu_ms_per_1k_requests"] for r in rows if r["events_cluster"] == "up"
        ),
        "cpu_ms_per_1k_requests_down": statistics.median(
            r["kproxy_cpu_ms_per_1k_requests"] for r in rows if r["events_cluster"] == "down"
        ),
        "events_dropped": dropped,
    }
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
