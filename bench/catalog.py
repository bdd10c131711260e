"""The benchmark's workloads: what each measures, on which upstream, with which load
generator, and the figures it reports (``python -m bench list`` prints them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KIB = 1024


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    higher_is_better: bool


# librdkafka asks for at most this much per Fetch (its message.max.bytes must not be
# larger than fetch.max.bytes): each response stays well below the 64 KiB after which
# kproxy streams a response, so it is gathered whole and its walk decided by the scan.
SMALL_FETCHES = {"fetch.max.bytes": 8192, "max.partition.fetch.bytes": 8192,
                 "message.max.bytes": 8192}  # fmt: skip
THROUGHPUT = (
    Metric("msg_per_s", "msg/s", "msg/s", True),
    Metric("mb_per_s", "MB/s", "MB/s", True),
)
LATENCY = (
    Metric("p50_ms", "p50", "ms", False),
    Metric("p99_ms", "p99", "ms", False),
    Metric("p999_ms", "p99.9", "ms", False),
)
# A fixed offered load: latency at that load, and whether the path kept up.
FIXED_RATE = (*LATENCY, Metric("mb_per_s", "MB/s delivered", "MB/s", True))
# Idle connections held while the resident memory is read: enough that the allocator's
# noise (a few MB either way) is small beside what they add (reported per 1,000).
IDLE_CONNECTIONS = 3_000
CONNECTIONS = (
    Metric("msg_per_s", "producer msg/s", "msg/s", True),
    Metric("rss_idle_mb", "RSS with idle conns", "MB", False),
    Metric("rss_delta_mb", "RSS added by idle conns", "MB", False),
)


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    upstream: str  # tansu | kafka
    kind: str  # produce | consume | latency | connections
    generator: str
    params: dict[str, Any]
    metrics: tuple[Metric, ...]
    target: str = ""  # the goal this workload's figures are judged against


def workloads(quick: bool, scale: float = 1.0) -> list[Workload]:
    """Every workload, with counts sized so that a full run fits in ~35 minutes on two
    shared cores (``quick``: a few minutes)."""

    def n(full: int, fast: int) -> int:
        return max(1, int((fast if quick else full) * scale))

    cf = "confluent-kafka"
    out = [
        Workload("produce-100B", "Produce 100 B messages, acks=all", "tansu", "produce", cf,
                 {"size": 100, "count": n(400_000, 60_000), "acks": "all"}, THROUGHPUT,
                 "throughput"),
        Workload("produce-1KiB", "Produce 1 KiB messages, acks=all", "tansu", "produce", cf,
                 {"size": KIB, "count": n(150_000, 25_000), "acks": "all"}, THROUGHPUT,
                 "throughput"),
        Workload("produce-64KiB", "Produce 64 KiB messages, acks=all", "tansu", "produce", cf,
                 {"size": 64 * KIB, "count": n(3_000, 600), "acks": "all"}, THROUGHPUT,
                 "throughput"),
        Workload("consume-1KiB", "Consume a pre-filled topic of 1 KiB messages from the start",
                 "tansu", "consume", cf, {"size": KIB, "count": n(150_000, 25_000)}, THROUGHPUT,
                 "throughput"),
        Workload("latency", "One 100 B produce at a time, acks=1: round-trip time", "tansu",
                 "latency", cf, {"size": 100, "count": n(5_000, 1_000), "acks": "1"}, LATENCY,
                 "latency"),
        Workload("rate-1KiB-10MBps", "1 KiB messages at a fixed 10 MB/s, acks=all: latency "
                 "from when each was due", "tansu", "rate", cf,
                 {"size": KIB, "rate": 9_766, "count": n(195_000, 30_000), "acks": "all"},
                 FIXED_RATE),
        Workload("rate-1KiB-50MBps", "1 KiB messages at a fixed 50 MB/s, acks=all: latency "
                 "from when each was due", "tansu", "rate", cf,
                 {"size": KIB, "rate": 48_828, "count": n(490_000, 100_000), "acks": "all"},
                 FIXED_RATE),
        Workload("rate-1KiB-100MBps", "1 KiB messages at a fixed 100 MB/s, acks=all: latency "
                 "from when each was due", "tansu", "rate", cf,
                 {"size": KIB, "rate": 97_656, "count": n(980_000, 200_000), "acks": "all"},
                 FIXED_RATE),
        Workload("connections",
                 f"{IDLE_CONNECTIONS:,} idle connections plus one busy producer (1 KiB, acks=all)",
                 "tansu", "connections", cf,
                 {"idle": IDLE_CONNECTIONS, "size": KIB, "count": n(100_000, 20_000),
                  "acks": "all"},
                 CONNECTIONS, "memory"),
        Workload("kafka-produce-1KiB", "Produce 1 KiB messages, acks=all (Apache Kafka)", "kafka",
                 "produce", cf, {"size": KIB, "count": n(150_000, 20_000), "acks": "all"},
                 THROUGHPUT, "throughput"),
        Workload("kafka-consume-1KiB", "Consume 1 KiB messages from the start (Apache Kafka)",
                 "kafka", "consume", cf, {"size": KIB, "count": n(400_000, 40_000)}, THROUGHPUT,
                 "throughput"),
        Workload("kafka-consume-small-fetches", "Consume 1 KiB messages in batches of 4 KiB, "
                 "at most 8 KiB per Fetch response (gathered whole, as a consumer at the end "
                 "of its partitions gets them; Apache Kafka)", "kafka", "consume", cf,
                 {"size": KIB, "count": n(40_000, 30_000), "client_config": SMALL_FETCHES,
                  "fill_config": {"batch.size": 4 * KIB}}, THROUGHPUT, "throughput"),
    ]  # fmt: skip
    return out


UPSTREAM_ORDER = ("tansu", "kafka")
UPSTREAM_TITLES = {
    "tansu": "Tansu broker (in-memory)",
    "kafka": "Apache Kafka (1 KRaft node)",
}
