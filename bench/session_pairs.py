"""The pairs `bench.session_bench` times and counts: a small Produce request and its
response (kio encodes both), driven through the sans-IO session alone or through the
runtime's connection glue as `kproxy run` builds it, with transports that drop what they
are given; and the Fetch round trips a consumer makes. Each is a function that runs one
call's pairs (`PAIRS_PER_CALL`), built by name (`pair_builders`).
"""

from __future__ import annotations

import argparse
import datetime
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kio.schema.produce.v10.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from bench.least_pair import least_pair
from tests.kio_support import encode_request_frame
from tests.session.frames import produce_response

if TYPE_CHECKING:
    from kproxy.runtime.client import ClientConnection
    from kproxy.runtime.upstream import UpstreamConnection


def produce_pair(record_bytes: int = 100, corr: int = 7) -> tuple[bytes, bytes]:
    request = ProduceRequest(
        transactional_id=None,
        acks=i16(1),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(
            TopicProduceData(
                name=TopicName("bench"),
                partition_data=(
                    PartitionProduceData(index=i32(0), records=Records(b"r" * record_bytes)),
                ),
            ),
        ),
    )
    frame = encode_request_frame(request, corr, "bench-producer")
    return frame, produce_response(corr, topic="bench")


def session_pair(lane: bool = True) -> Callable[[], object]:
    from kproxy.config.settings import parse_config
    from kproxy.runtime.mapping import AddressMap
    from kproxy.session import ProxySession, SessionLimits

    settings = parse_config({"cluster": {"bootstrap_servers": ["b.invalid:9092"]}})
    # As the runtime builds it: the leader table says no client awaits a recovery.
    session = ProxySession(
        AddressMap(settings.cluster, settings.listeners),
        SessionLimits(1 << 20, 1000),
        awaiting_success={},
    )
    request, response = produce_pair()

    def general() -> object:
        session.client_bytes(request, 1.0)
        return session.upstream_bytes(response, 1.001)

    def as_the_runtime_drives_it() -> object:
        # The fast lane first (kproxy.session.fast_lane); the first pair (each side's
        # first frame) takes the general path.
        if session.request_alone(request, 1.0) < 0:
            session.client_bytes(request, 1.0)
        if session.response_read(response) is False:
            session.upstream_bytes(response, 1.001)
        return None

    return as_the_runtime_drives_it if lane else general


class _DroppingTransport:
    """What the connection glue calls on a transport, keeping nothing."""

    def writelines(self, chunks: object) -> None:
        pass

    def write(self, data: object) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def set_write_buffer_limits(self, high: int) -> None:
        pass

    def get_extra_info(self, name: str) -> object:
        return ("127.0.0.1", 50000) if name == "peername" else None


# A large Produce request read in pieces: what a batching producer's request of ~300 KB
# of small records (librdkafka at 100 B a record) looks like to kproxy, three reads of
# about 100 KB each, the request streamed through the general path.
LARGE_RECORD_BYTES = 300_000
LARGE_READS = 3
# Pipelined pairs: that many requests in one read, then their responses in one read (a
# client with several requests in flight, a broker answering them together).
PIPELINED = 3
# A consumer's Fetch response: 1 MB of records in about ten reads (uvloop reads up to
# 256 KB; the Java perf consumer's averaged about 100 KB here).
FETCH_RECORD_BYTES = 1_000_000
FETCH_READS = 10
# A consumer at the end of its partitions: a few small batches in each response.
SMALL_FETCH_RECORDS = (1500, 700, 300)
# A broker writes a Fetch response in parts (its header, the records from the log with
# sendfile, the fields after them): kproxy read 78% of the small ones of
# kafka-consume-small-fetches in three when this was set, and 1.63 reads a response on
# average on 2026-12-01 (`perf stat` of its read calls, docs/performance.md). Three
# stays: the costlier case, and comparable with the figures recorded before.
SMALL_FETCH_READS = 3


def runtime_pair(
    events_dir: Path, record_bytes: int = 100, reads: int = 1, pipelined: int = 1
) -> Callable[[], object]:
    """One client connection and its broker side, as `kproxy run` builds them; the
    request arrives in ``reads`` pieces, or ``pipelined`` requests in one read and their
    responses in another."""
    client, upstream = _runtime_connection(events_dir)
    pairs = [produce_pair(record_bytes, 7 + i) for i in range(pipelined)]
    request, response = (b"".join(frames) for frames in zip(*pairs, strict=True))
    pieces = _cut(request, reads)

    def run() -> object:
        for data in pieces:
            client.data_received(data)
        upstream.data_received(response)
        return None

    return run


def runtime_fetch(
    events_dir: Path, records: tuple[int, ...] = (FETCH_RECORD_BYTES,), reads: int = FETCH_READS
) -> Callable[[], object]:
    """A Fetch v17 request and its response with these record bytes per partition, the
    response in `reads` reads: by default 1 MB of records in one partition in
    ``FETCH_READS`` reads, streamed, as a catching-up consumer's Fetch responses are;
    with ``SMALL_FETCH_RECORDS`` in one read, gathered whole, as a consumer at the end
    of its partitions gets them."""
    from tests.kio_support import encode_response_frame, fetch_v17_request
    from tests.session.fetch_frames import fetch_response

    client, upstream = _runtime_connection(events_dir)
    request = fetch_v17_request(7, uuid.UUID(int=7), "consumer")
    response = encode_response_frame(fetch_response(17, [b"r" * n for n in records]), 7)
    pieces = _cut(response, reads)

    def run() -> object:
        client.data_received(request)
        for data in pieces:
            upstream.data_received(data)
        return None

    return run


def _cut(data: bytes, reads: int) -> list[bytes]:
    piece = -(-len(data) // reads)
    return [data[i : i + piece] for i in range(0, len(data), piece)]


def _runtime_connection(events_dir: Path) -> tuple[ClientConnection, UpstreamConnection]:
    """A `ClientConnection` and its `UpstreamConnection` over the real services,
    observer, metrics and event log, with transports that drop what they are given."""
    from prometheus_client import CollectorRegistry

    from kproxy.config.settings import parse_config
    from kproxy.observe.observability import Observability
    from kproxy.runtime.client import ClientConnection
    from kproxy.runtime.proxy import Proxy
    from kproxy.runtime.upstream import UpstreamConnection

    settings = parse_config(
        {
            "cluster": {"bootstrap_servers": ["b.invalid:9092"]},
            "events": {"dir": str(events_dir)},
        }
    )
    observer = Observability(settings, registry=CollectorRegistry())
    proxy = Proxy(settings, observer)
    client = ClientConnection(proxy.services, "bootstrap", None)
    client.connection_made(_DroppingTransport())  # type: ignore[arg-type]
    upstream = UpstreamConnection(client)
    upstream.connection_made(_DroppingTransport())  # type: ignore[arg-type]
    client.upstream = upstream
    client.first_request_due_from = None
    return client, upstream


def events_dir() -> tempfile.TemporaryDirectory[str]:
    # The event log's writer thread can still be writing when the directory is removed.
    return tempfile.TemporaryDirectory(prefix="kproxy-session-bench-", ignore_cleanup_errors=True)


# Pairs one call of a measured run makes (the counts and timings are per pair).
PAIRS_PER_CALL = {"runtime-pipelined": PIPELINED}


def warmed_pairs(
    which: Iterable[str], warm_calls: int = 1000
) -> Iterator[tuple[str, Callable[[], object], int]]:
    """Each named pair built and run `warm_calls` times first (every branch taken, every
    table made): its name, its run, and the pairs one run makes. The pairs' event log
    lives as long as the iteration."""
    with events_dir() as events:
        builders = pair_builders(Path(events))
        for name in which:
            run = builders[name]()
            for _ in range(warm_calls):
                run()
            yield name, run, PAIRS_PER_CALL.get(name, 1)


def pair_builders(events: Path) -> dict[str, Callable[[], Callable[[], object]]]:
    """Each measured pair by its `--run-pairs` name, built on demand."""
    return {
        "runtime": lambda: runtime_pair(events),
        "runtime-large": lambda: runtime_pair(events, LARGE_RECORD_BYTES, LARGE_READS),
        "runtime-pipelined": lambda: runtime_pair(events, pipelined=PIPELINED),
        "runtime-fetch": lambda: runtime_fetch(events),
        "runtime-fetch-small": lambda: runtime_fetch(events, SMALL_FETCH_RECORDS, 1),
        "runtime-fetch-small-parts": lambda: runtime_fetch(
            events, SMALL_FETCH_RECORDS, SMALL_FETCH_READS
        ),
        "session": session_pair,
        "general": lambda: session_pair(lane=False),
        "least": lambda: least_pair(*produce_pair()),
    }


def check_pair_names(parser: argparse.ArgumentParser, names: list[str]) -> None:
    """Refuse, through `parser` (usage and exit status 2), a pair name that
    `pair_builders` does not know, before anything is built or run."""
    known = pair_builders(Path())
    unknown = [name for name in names if name not in known]
    if unknown:
        parser.error(f"no pair named {', '.join(unknown)} (known: {', '.join(sorted(known))})")
