"""Time to the first and last byte of a large Fetch response, through kproxy and direct:

    python -m bench.fetch_stream_bench [--sizes 64K,1M,8M] [--rounds 5] [--requests 9]

A scripted broker (`tests.scripted_broker`, kio-encoded) answers every Fetch v17 with one
partition of ``size`` bytes of records. A client on a raw socket sends one Fetch at a
time and notes when the first byte of the answer arrives and when the last does, on three
paths in interleaved rounds: direct, kproxy streaming (the default
`limits.stream_responses_after_bytes`) and kproxy gathering every response whole first
(``stream_responses_after_bytes: 0``, as before streaming). Figures are medians over the
rounds of each round's median, with the min-max spread; also kproxy's CPU per GB.
Results go to ``bench/fetch_stream_results.json``. Not a test: no timed assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import socket
import statistics
import struct
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bench.stats import summarize
from tests.kio_support import fetch_v17_request
from tests.kproxy_process import KproxyProcess
from tests.scripted_broker import ScriptedBroker
from tests.session.fetch_frames import fetch_response

OUT = Path(__file__).resolve().parent / "fetch_stream_results.json"
TOPIC_ID = uuid.UUID(int=7)  # the topic of tests.session.fetch_frames's responses
PATHS = ("direct", "kproxy-streamed", "kproxy-gathered")


def parse_size(text: str) -> int:
    units = {"K": 1024, "M": 1 << 20}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(min(1 << 20, n - len(out)))
        if not chunk:
            raise ConnectionError("closed mid-response")
        out += chunk
    return bytes(out)


def one_fetch(sock: socket.socket, corr: int) -> tuple[float, float]:
    """(seconds to the first byte, seconds to the last byte) of one Fetch."""
    frame = fetch_v17_request(corr, TOPIC_ID, "fetch-bench")
    start = time.perf_counter()
    sock.sendall(frame)
    head = sock.recv(4)
    first = time.perf_counter() - start
    head += _recv_exactly(sock, 4 - len(head))
    (size,) = struct.unpack(">i", head)
    _recv_exactly(sock, size)
    return first, time.perf_counter() - start


def measure(address: str, requests: int) -> tuple[float, float]:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        one_fetch(sock, 1)  # warm-up: connections, discovery
        samples = [one_fetch(sock, corr) for corr in range(2, 2 + requests)]
    return (
        statistics.median(s[0] for s in samples),
        statistics.median(s[1] for s in samples),
    )


def _serve(size: int, conn: Connection) -> None:
    """The scripted broker, in a process of its own: it must not share the client's GIL."""
    response = fetch_response(17, [b"r" * size])
    with ScriptedBroker((1,)) as broker:
        broker.handlers[1] = lambda _version, _request: response
        conn.send((broker.bootstrap, broker.dial_overrides))
        conn.recv()  # until told to stop


@contextlib.contextmanager
def broker_process(size: int) -> Iterator[tuple[str, dict[str, str]]]:
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.get_context("spawn").Process(target=_serve, args=(size, child))
    proc.start()
    try:
        if not parent.poll(60):
            raise RuntimeError("the scripted broker did not start")
        yield parent.recv()
    finally:
        parent.send("stop")
        proc.join(10)
        if proc.is_alive():
            proc.kill()


def measure_size(size: int, rounds: int, requests: int, tmp: Path) -> dict[str, Any]:
    rows: dict[str, list[tuple[float, float]]] = {p: [] for p in PATHS}
    cpu = {"kproxy-streamed": 0.0, "kproxy-gathered": 0.0}
    with broker_process(size) as (bootstrap, overrides):
        cluster = {"dial_overrides": overrides}
        dirs = {name: tmp / f"{size}-{name}" for name in cpu}
        for d in dirs.values():
            d.mkdir()
        streamed = KproxyProcess(dirs["kproxy-streamed"], [bootstrap], cluster=cluster)
        gathered = KproxyProcess(
            dirs["kproxy-gathered"],
            [bootstrap],
            cluster=cluster,
            limits={"stream_responses_after_bytes": 0},
        )
        with streamed.start(), gathered.start():
            for _ in range(rounds):
                for path, address, proc in (
                    ("direct", bootstrap, None),
                    ("kproxy-streamed", streamed.bootstrap, streamed),
                    ("kproxy-gathered", gathered.bootstrap, gathered),
                ):
                    before = proc.cpu_seconds() if proc else 0.0
                    rows[path].append(measure(address, requests))
                    if proc:
                        cpu[path] += proc.cpu_seconds() - before
    moved_gb = size * (requests + 1) * rounds / 1e9
    return {
        path: {
            "first_byte_ms": summarize([r[0] * 1e3 for r in rows[path]]),
            "last_byte_ms": summarize([r[1] * 1e3 for r in rows[path]]),
            **({"cpu_s_per_gb": cpu[path] / moved_gb} if path in cpu else {}),
        }
        for path in PATHS
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="64K,1M,8M,32M")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=9)
    args = parser.parse_args()
    results: dict[str, Any] = {
        "command": "python -m bench.fetch_stream_bench " + " ".join(sys.argv[1:]),
        "rounds": args.rounds,
        "requests": args.requests,
        "sizes": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for text in args.sizes.split(","):
            size = parse_size(text)
            results["sizes"][str(size)] = measure_size(size, args.rounds, args.requests, Path(tmp))
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))


def render(results: dict[str, Any]) -> str:
    lines = [
        "| response | path | first byte (ms) | last byte (ms) | kproxy CPU s/GB |",
        "|---:|---|---:|---:|---:|",
    ]
    for size, paths in results["sizes"].items():
        for path, r in paths.items():
            fb, lb = r["first_byte_ms"], r["last_byte_ms"]
            cpu = f"{r['cpu_s_per_gb']:.2f}" if "cpu_s_per_gb" in r else "-"
            lines.append(
                f"| {int(size) // 1024} KiB | {path} | {fb['median']:.2f} "
                f"[{fb['min']:.2f}-{fb['max']:.2f}] | {lb['median']:.2f} "
                f"[{lb['min']:.2f}-{lb['max']:.2f}] | {cpu} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
