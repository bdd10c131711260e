"""What kproxy's own Python costs per small request/response pair, without sockets:

    python -m bench.session_bench [--repeat 7] [--compiled]

The sans-IO session (`kproxy.session.ProxySession`) is given a Produce v10 request with
100 B of records and its successful response, both encoded by kio, one pair after the
other: the work kproxy does on every small produce round trip (framing, header, the
in-flight table, the response's scan, the forward) and nothing the kernel does. It is
driven as the runtime drives it, each read offered to the fast lane first
(`kproxy.session.fast_lane`), and again through the general path alone.

The same pair is also measured through the runtime's connection glue as
`kproxy run` builds it (`ClientConnection` and `UpstreamConnection` over the real
services, observer, metrics and event log), with transports that drop what they are
given: everything kproxy's own Python does per round trip except the event loop and the
syscalls. It is measured again with a 300 KB request in three reads, streamed through
the general path (what a batching producer of small records sends), and with three
pairs pipelined: their requests in one read, their responses in another, and with a
Fetch v17 request and its 1 MB response in ten reads, streamed (`runtime-fetch`: what a
consumer's round trip costs kproxy's Python). Beside them,
`bench.least_pair` does the same pair's necessary work in one
function per direction: the least Python such a pair needs, a yardstick for the fast
lane.

``--instructions`` counts instead of timing: the machine instructions one pair takes, as
valgrind's callgrind counts them (a run of N pairs less a run of none, after the same
warm-up). The count does not move with the machine's neighbours, so two revisions
compare to a fraction of a percent where their timings swing by half (it needs
valgrind: ``apt-get install valgrind``; about two minutes).

``--compiled`` also builds the hot path with mypyc (``KPROXY_COMPILE=1``, setup.py) in a
temporary copy of the source and measures it there, in a subprocess, beside the pure
Python figure. Each figure is the median of ``--repeat`` timed runs (each long enough to
last 50 ms). Not a test: there are no timed assertions.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kio.schema.produce.v10.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from bench.ab import compiled_copy
from bench.least_pair import least_pair
from bench.rewrite_bench import seconds_per_call
from tests.kio_support import encode_request_frame
from tests.session.frames import produce_response

if TYPE_CHECKING:
    from kproxy.proxy.client import ClientConnection
    from kproxy.proxy.upstream import UpstreamConnection

REPO = Path(__file__).resolve().parents[1]


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
    from kproxy.config import parse_config
    from kproxy.proxy.mapping import AddressMap
    from kproxy.session import ProxySession, SessionLimits

    settings = parse_config({"cluster": {"bootstrap_servers": ["b.invalid:9092"]}})
    # As the runtime builds it: the leader table says no client awaits a recovery.
    session = ProxySession(
        AddressMap(settings.cluster, settings.listeners),
        SessionLimits(1 << 20, 1000),
        awaits_success=lambda client_id: False,
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
        if session.response_alone(response) is None:
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

    from kproxy.config import parse_config
    from kproxy.observability import Observability
    from kproxy.proxy.client import ClientConnection
    from kproxy.proxy.proxy import Proxy
    from kproxy.proxy.upstream import UpstreamConnection

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


def _events_dir() -> tempfile.TemporaryDirectory[str]:
    # The event log's writer thread can still be writing when the directory is removed.
    return tempfile.TemporaryDirectory(prefix="kproxy-session-bench-", ignore_cleanup_errors=True)


# Pairs one call of a measured run makes (the counts and timings are per pair).
PAIRS_PER_CALL = {"runtime-pipelined": PIPELINED}


def _pair_builders(events: Path) -> dict[str, Callable[[], Callable[[], object]]]:
    """Each measured pair by its `--run-pairs` name, built on demand."""
    return {
        "runtime": lambda: runtime_pair(events),
        "runtime-large": lambda: runtime_pair(events, LARGE_RECORD_BYTES, LARGE_READS),
        "runtime-pipelined": lambda: runtime_pair(events, pipelined=PIPELINED),
        "runtime-fetch": lambda: runtime_fetch(events),
        "runtime-fetch-small": lambda: runtime_fetch(events, SMALL_FETCH_RECORDS, 1),
        "session": session_pair,
        "general": lambda: session_pair(lane=False),
        "least": lambda: least_pair(*produce_pair()),
    }


def measure(repeat: int) -> dict[str, object]:
    import kproxy.session.session as module

    with _events_dir() as events:
        builders = _pair_builders(Path(events))
        us = {
            which: seconds_per_call(build(), repeat) * 1e6 / PAIRS_PER_CALL.get(which, 1)
            for which, build in builders.items()
        }
    return {
        "us_per_pair": us["session"],
        "general_us_per_pair": us["general"],
        "runtime_us_per_pair": us["runtime"],
        "runtime_large_us_per_pair": us["runtime-large"],
        "runtime_pipelined_us_per_pair": us["runtime-pipelined"],
        "runtime_fetch_us_per_pair": us["runtime-fetch"],
        "runtime_fetch_small_us_per_pair": us["runtime-fetch-small"],
        "least_us_per_pair": us["least"],
        "compiled": not str(module.__file__).endswith(".py"),
    }


_COLLECTED = re.compile(r"Collected : (\d+)")


def _run_pairs(which: str, count: int) -> None:
    """Warm up, then `count` pairs of `which` (the process valgrind counts)."""
    with _events_dir() as events:
        run = _pair_builders(Path(events))[which]()
        for _ in range(200 + count):
            run()


def instructions_per_pair(which: str, pairs: int = 6000) -> int:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")

    def collected(count: int) -> int:
        argv = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                "-m", "bench.session_bench", "--run-pairs", which, str(count)]  # fmt: skip
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[-4:])} failed: {proc.stderr[-1500:]}")
        found = _COLLECTED.search(proc.stderr)
        if found is None:
            raise RuntimeError(f"no instruction count from callgrind: {proc.stderr[-500:]}")
        return int(found.group(1))

    return (collected(pairs) - collected(0)) // (pairs * PAIRS_PER_CALL.get(which, 1))


def measure_compiled(repeat: int) -> dict[str, object]:
    """The same, on a mypyc build of this source in a temporary copy."""
    with tempfile.TemporaryDirectory(prefix="kproxy-compiled-") as tmp:
        copy = compiled_copy(Path(tmp))
        # The copy first on the path: its compiled kproxy, this checkout's bench and tests.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy), str(REPO)])}
        run = subprocess.run(
            [sys.executable, "-m", "bench.session_bench", "--repeat", str(repeat), "--json-only"],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        result: dict[str, object] = json.loads(run.stdout)
        return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--compiled", action="store_true", help="also measure a mypyc build")
    ap.add_argument(
        "--instructions", action="store_true", help="count instructions (valgrind) instead"
    )
    ap.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--run-pairs", nargs=2, metavar=("WHICH", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.run_pairs:
        _run_pairs(args.run_pairs[0], int(args.run_pairs[1]))
        return 0
    if args.instructions:
        for which in (
            "session",
            "general",
            "runtime",
            "runtime-large",
            "runtime-pipelined",
            "runtime-fetch",
            "runtime-fetch-small",
            "least",
        ):
            print(f"{which}: {instructions_per_pair(which):,} instructions per pair")
        return 0
    here = measure(args.repeat)
    if args.json_only:
        print(json.dumps(here))
        return 0
    kind = "compiled" if here["compiled"] else "pure Python"
    print(f"session, Produce v10 request + response: {here['us_per_pair']:.2f} us ({kind})")
    print(
        "  the same pair through the general path, no fast lane: "
        f"{here['general_us_per_pair']:.2f} us ({kind})"
    )
    print(
        "runtime glue, observer and metrics included: "
        f"{here['runtime_us_per_pair']:.2f} us ({kind})"
    )
    print(
        f"  a {LARGE_RECORD_BYTES // 1000} KB request in {LARGE_READS} reads (streamed, "
        f"general path): {here['runtime_large_us_per_pair']:.2f} us ({kind})"
    )
    print(
        f"  {PIPELINED} pairs pipelined (their requests in one read, their responses in "
        f"another): {here['runtime_pipelined_us_per_pair']:.2f} us per pair ({kind})"
    )
    print(
        f"  a Fetch v17 request and its {FETCH_RECORD_BYTES // 1000} KB response in "
        f"{FETCH_READS} reads (streamed): {here['runtime_fetch_us_per_pair']:.2f} us ({kind})"
    )
    print(
        f"  a Fetch v17 request and its response of {len(SMALL_FETCH_RECORDS)} partitions, "
        f"{sum(SMALL_FETCH_RECORDS)} B of records, in one read (gathered): "
        f"{here['runtime_fetch_small_us_per_pair']:.2f} us ({kind})"
    )
    print(
        "the least Python a pair needs (bench/least_pair.py, a yardstick, not kproxy): "
        f"{here['least_us_per_pair']:.2f} us"
    )
    if args.compiled:
        built = measure_compiled(args.repeat)
        assert built["compiled"], "the mypyc build was not the one imported"
        pure, fast = float(here["us_per_pair"]), float(built["us_per_pair"])  # type: ignore[arg-type]
        print(f"session, Produce v10 request + response: {fast:.2f} us (mypyc)")
        print(f"  compiled / pure: {fast / pure:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
