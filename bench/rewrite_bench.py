"""What a rewrite costs, on frames built by kio (an independent codec):

    python -m bench.rewrite_bench [--repeat 7] [--json out.json]

1. A Fetch v16 response with KIP-951 NodeEndpoints, 1 KiB vs 1 MiB of records per
   partition, 1 and 100 partitions: kproxy's walk + rewrite must cost the same whatever
   the record bytes (they are skipped by length and forwarded as views, never copied).
2. A Metadata v12 response with 100 brokers and 10,000 partitions: kproxy's walk +
   rewrite against kio's decode + re-encode of the same bytes (what a proxy that builds
   the whole message as objects pays).

Each figure is the median of ``--repeat`` timed runs (each run repeats the operation
enough times to last at least 50 ms). Not a test: there are no timed assertions.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import struct
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.rewriter import rewrite
from kproxy.protocol.walker import Endpoint, walk
from tests.kio_support import decode_response_frame, encode_response_frame, kio_message_class

MS = datetime.timedelta(milliseconds=1)


def _module(api_key: int, version: int) -> Any:
    cls = kio_message_class(api_key, version, "response")
    assert cls is not None
    return sys.modules[cls.__module__], cls


def record_bytes(size: int) -> bytes:
    """A magic-2 record batch header followed by opaque bytes, `size` bytes in all."""
    header = struct.pack(">qiibihqqqhii", 0, size - 12, 0, 2, 0, 0, 0, 0, -1, -1, -1, 1)
    return header + b"\xab" * (size - len(header))


def fetch_v16(partitions: int, records_per_partition: int) -> bytes:
    mod, cls = _module(1, 16)
    records = record_bytes(records_per_partition)
    parts = tuple(
        mod.PartitionData(
            partition_index=i, error_code=ErrorCode.none, high_watermark=1, last_stable_offset=1,
            log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1,
            records=records,
        )
        for i in range(partitions)
    )  # fmt: skip
    msg = cls(
        throttle_time=0 * MS, error_code=ErrorCode.none, session_id=0,
        responses=(mod.FetchableTopicResponse(topic_id=uuid.UUID(int=7), partitions=parts),),
        node_endpoints=tuple(
            mod.NodeEndpoint(node_id=n, host=f"broker-{n}.cluster.internal", port=9092, rack=None)
            for n in (1, 2, 3)
        ),
    )  # fmt: skip
    return encode_response_frame(msg, 1)


def metadata_v12(brokers: int, topics: int, partitions_per_topic: int) -> bytes:
    mod, cls = _module(3, 12)
    bs = tuple(
        mod.MetadataResponseBroker(
            node_id=n, host=f"broker-{n}.cluster.internal", port=9092, rack=f"r{n % 3}"
        )
        for n in range(brokers)
    )
    ts = tuple(
        mod.MetadataResponseTopic(
            error_code=ErrorCode.none, name=f"topic-{t}", topic_id=uuid.UUID(int=t + 1),
            is_internal=False,
            partitions=tuple(
                mod.MetadataResponsePartition(
                    error_code=ErrorCode.none, partition_index=p, leader_id=(t + p) % brokers,
                    leader_epoch=5, replica_nodes=tuple((t + p + i) % brokers for i in range(3)),
                    isr_nodes=tuple((t + p + i) % brokers for i in range(3)),
                    offline_replicas=(),
                )
                for p in range(partitions_per_topic)
            ),
            topic_authorized_operations=-2147483648,
        )
        for t in range(topics)
    )  # fmt: skip
    msg = cls(throttle_time=0 * MS, brokers=bs, cluster_id="bench", controller_id=0, topics=ts)
    return encode_response_frame(msg, 1)


def _mapping(ep: Endpoint) -> tuple[str, int]:
    return "127.0.0.1", 19000 + (ep.node_id or 0)


def kproxy_rewrite(wire: bytes, api_key: int, version: int) -> Callable[[], object]:
    frame = memoryview(wire)[4:]

    def run() -> object:
        _corr, body = parse_response_header(frame, 1)
        found = walk(frame, body, api_key, version, False)
        return rewrite(frame, found.endpoints, _mapping)

    return run


def kio_roundtrip(wire: bytes, api_key: int, version: int) -> Callable[[], object]:
    _mod, cls = _module(api_key, version)

    def run() -> object:
        _corr, msg = decode_response_frame(cls, wire)
        return encode_response_frame(msg, 1)

    return run


def seconds_per_call(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm up
    n = 1
    while True:  # calibrate: enough calls per run to last 50 ms
        start = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - start >= 0.05:
            break
        n *= 2
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - start) / n)
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    results: dict[str, Any] = {"fetch_v16": [], "metadata_v12": {}}

    print("Fetch v16 with NodeEndpoints: walk + rewrite, per response")
    for partitions in (1, 100):
        small = fetch_v16(partitions, 1024)
        large = fetch_v16(partitions, 1024 * 1024)
        t_small = seconds_per_call(kproxy_rewrite(small, 1, 16), args.repeat)
        t_large = seconds_per_call(kproxy_rewrite(large, 1, 16), args.repeat)
        row = {
            "partitions": partitions,
            "frame_bytes_1k": len(small),
            "frame_bytes_1m": len(large),
            "us_1k": t_small * 1e6,
            "us_1m": t_large * 1e6,
            "ratio_1m_to_1k": t_large / t_small,
        }
        results["fetch_v16"].append(row)
        print(
            f"  {partitions:>3} partition(s): 1 KiB each {t_small * 1e6:8.1f} us "
            f"({len(small):,} B), 1 MiB each {t_large * 1e6:8.1f} us ({len(large):,} B): "
            f"ratio {t_large / t_small:.2f}"
        )

    wire = metadata_v12(100, 100, 100)
    t_kproxy = seconds_per_call(kproxy_rewrite(wire, 3, 12), args.repeat)
    t_kio = seconds_per_call(kio_roundtrip(wire, 3, 12), max(3, args.repeat // 2))
    results["metadata_v12"] = {
        "brokers": 100,
        "partitions": 10_000,
        "frame_bytes": len(wire),
        "kproxy_ms": t_kproxy * 1e3,
        "kio_ms": t_kio * 1e3,
        "kio_over_kproxy": t_kio / t_kproxy,
    }
    print(
        f"Metadata v12, 100 brokers, 10,000 partitions ({len(wire):,} B): "
        f"kproxy walk + rewrite {t_kproxy * 1e3:.2f} ms, kio decode + encode "
        f"{t_kio * 1e3:.2f} ms: kproxy is {t_kio / t_kproxy:.1f}x faster"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
