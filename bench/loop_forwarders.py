"""Two ways to forward bytes on the standard asyncio loop, timed one after the other:

    python -m bench.loop_forwarders [--round-trips 30000] [--runs 3]

``transports``: two `asyncio.Protocol`s, each read written to the other side's transport
(what `bench.python_floor` does with ``--loop asyncio``). ``raw``: the same sockets read
and written directly from `loop.add_reader` callbacks, without asyncio's transports. A
forked echo server stands for the broker and one blocking client sends 100 B at a time;
each run gives p50 and p99 of the round trip and the forwarder's CPU per round trip
(from /proc). The question it answers: whether the standard loop's transports are
what a Python forwarder pays on that loop (docs/performance.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import time
from collections.abc import Callable

from bench.procfs import CpuSince
from bench.python_floor import ForwardedSide
from bench.stats import median

MESSAGE = b"x" * 100
WARMUP = 2_000


def _listener() -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    return listener


def _echo(listener: socket.socket) -> None:
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while data := conn.recv(65536):
        conn.sendall(data)


async def _transports(client: socket.socket, backend: int) -> None:
    loop = asyncio.get_running_loop()
    _, far = await loop.create_connection(ForwardedSide, "127.0.0.1", backend)
    _, near = await loop.connect_accepted_socket(ForwardedSide, client)
    near.peer, far.peer = far, near
    if near.pending is not None and far.transport is not None:  # read before the peers met
        far.transport.writelines(near.pending)
        near.pending = None
    await asyncio.Event().wait()


def _forward(source: socket.socket, sink: socket.socket) -> Callable[[], None]:
    recv, send = source.recv, sink.send

    def ready() -> None:
        data = recv(262144)
        if data and send(data) != len(data):
            raise RuntimeError("a short send: this probe writes small messages only")

    return ready


async def _raw(client: socket.socket, backend: int) -> None:
    loop = asyncio.get_running_loop()
    upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    upstream.setblocking(False)
    await loop.sock_connect(upstream, ("127.0.0.1", backend))
    for sock in (client, upstream):
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    loop.add_reader(client.fileno(), _forward(client, upstream))
    loop.add_reader(upstream.fileno(), _forward(upstream, client))
    await asyncio.Event().wait()


def _fork(child: Callable[[], None]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            child()
        finally:
            os._exit(0)
    return pid


def one_run(mode: str, round_trips: int) -> dict[str, float]:
    """p50 and p99 (us) and the forwarder's CPU and user time per round trip (us)."""
    echo_listener, front = _listener(), _listener()
    echo = _fork(lambda: _echo(echo_listener))
    serve = _transports if mode == "transports" else _raw
    backend = echo_listener.getsockname()[1]
    forwarder = _fork(lambda: asyncio.run(serve(front.accept()[0], backend)))
    echo_listener.close()
    try:
        with socket.create_connection(front.getsockname()) as sock:
            front.close()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(10.0)  # a forwarder that stopped fails the run, not hangs it
            for _ in range(WARMUP):
                sock.sendall(MESSAGE)
                if sock.recv(1000) != MESSAGE:
                    raise RuntimeError(f"{mode}: the echo came back changed")
            cpu = CpuSince(forwarder)
            times = []
            for _ in range(round_trips):
                start = time.perf_counter_ns()
                sock.sendall(MESSAGE)
                sock.recv(1000)
                times.append(time.perf_counter_ns() - start)
            user, system = cpu.spent()
    finally:
        for pid in (forwarder, echo):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    times.sort()
    per = 1e6 / round_trips
    return {
        "p50_us": times[round_trips // 2] / 1000,
        "p99_us": times[round_trips * 99 // 100] / 1000,
        "cpu_us": (user + system) * per,
        "user_us": user * per,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loop_forwarders")
    parser.add_argument("--round-trips", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    one_run("raw", args.round_trips // 4)  # untimed: a first run here reads slow
    runs: dict[str, list[dict[str, float]]] = {"transports": [], "raw": []}
    for _ in range(args.runs):
        for mode, got in runs.items():
            got.append(one_run(mode, args.round_trips))
            print(_line(mode, got[-1]))
    print("median of the runs:")
    for mode, got in runs.items():
        print(_line(mode, {key: median([run[key] for run in got]) for key in got[0]}))
    return 0


def _line(mode: str, got: dict[str, float]) -> str:
    return (
        f"{mode:10}  p50 {got['p50_us']:6.1f} us  p99 {got['p99_us']:6.1f} us  "
        f"CPU {got['cpu_us']:5.1f} us a round trip (user {got['user_us']:4.1f})"
    )


if __name__ == "__main__":
    raise SystemExit(main())
