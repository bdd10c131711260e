"""`bench.python_floor`, the Python proxy that parses nothing, runs on the loop an A/B asks
for: uvloop by default, the standard asyncio loop beside kproxy on it
(`python -m bench ab --python-floor --standard-loop`)."""

from __future__ import annotations

import argparse
import dataclasses
import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import bench.harness
from bench.ab import add_arguments, main_ab
from bench.harness import Harness, Options
from bench.peers import PythonFloorPeer
from bench.procfs import maps_mention
from tests.peers.net import LOOPBACK


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def echo() -> Iterator[str]:
    server = socketserver.ThreadingTCPServer((LOOPBACK, 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"{LOOPBACK}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_the_floor_forwards_bytes_on_the_loop_asked_for(
    loop: str, echo: str, tmp_path: Path
) -> None:
    floor = PythonFloorPeer(f"python-floor-{loop}", echo, tmp_path, loop=loop)
    floor.start()
    try:
        assert floor.pid is not None
        assert maps_mention(floor.pid, "uvloop") == (loop == "uvloop")
        with socket.create_connection((LOOPBACK, floor.port), timeout=10) as conn:
            sent = bytes(range(256)) * 400
            conn.sendall(sent)
            got = b""
            while len(got) < len(sent):
                piece = conn.recv(65536)
                assert piece, "the floor closed the connection"
                got += piece
        assert got == sent
    finally:
        floor.stop()


class _Captured(Exception):
    pass


@pytest.mark.parametrize(("flags", "loop"), [([], "uvloop"), (["--standard-loop"], "asyncio")])
def test_an_ab_runs_the_floor_on_kproxys_loop(
    flags: list[str], loop: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given: list[Options] = []

    class CapturingHarness:
        def __init__(self, opts: Options) -> None:
            given.append(opts)

        def run(self) -> None:
            raise _Captured

    monkeypatch.setattr(bench.harness, "Harness", CapturingHarness)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["latency", "--python-floor", "--out", str(tmp_path), *flags])
    with pytest.raises(_Captured):
        main_ab(args)
    (opts,) = given
    assert f"kproxy-{loop}" in opts.paths and "python-floor" in opts.paths
    # What the harness hands every upstream it makes.
    upstream = Harness(dataclasses.replace(opts, workdir=tmp_path))._make_upstream("mock")
    assert upstream.want_floor and upstream.floor_loop == loop


def test_a_peer_on_another_loop_than_asked_is_stopped_and_refused(
    echo: str, tmp_path: Path
) -> None:
    floor = PythonFloorPeer("python-floor-uvloop", echo, tmp_path, loop="uvloop").start()
    try:
        with pytest.raises(RuntimeError, match="wanted the asyncio loop, uvloop=True"):
            floor.require_loop("asyncio")
        assert floor.process is not None and not floor.process.running
    finally:
        floor.stop()
