"""What an idle proxied connection holds in Python, against the least any Python proxy
on uvloop (or, with ``--standard-loop``, the standard asyncio loop) can hold:

    python -m bench.connection_floor [--connections 1000] [--standard-loop]

Both proxies stand in front of one Tansu broker (in memory), as in
``python -m bench ab connections``. The idle-connection holder of
``python -m bench ab connections`` opens the connections; each sends one ApiVersions
request, reads the answer and stays open, so each proxy holds a client side and a broker
side per connection. ``tracemalloc`` counts what is still allocated afterwards, per
connection:

- ``forwarder``: the floor (`bench.python_floor`). Two protocol objects with
  ``__slots__`` and the loop's two transports, nothing else: what any Python proxy on
  that loop holds per connection.
- ``kproxy``: kproxy itself (`kproxy.app.serve` on the same loop, its defaults).

Allocations made by uvloop without a Python frame above them are listed under asyncio's
``runners.py``; the standard loop's are in its own modules (``selector_events.py``,
``selectors.py``, ``events.py``). Not a test: it prints what it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any

import uvloop

from bench.python_floor import ForwardedClient
from kproxy.app import Running, Stop, serve
from kproxy.config.settings import parse_config
from tests.peers.tansu import TansuBroker

REPO = Path(__file__).resolve().parents[1]


async def _hold(port: int, count: int, report: Callable[[], None]) -> None:
    """Open ``count`` idle connections through ``port``, call ``report``, close them."""
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.workloads", "idle", "--bootstrap", f"127.0.0.1:{port}",
        "--topic", "unused", "--count", str(count), "--timeout", "120",
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdin is not None
    ready = json.loads(await holder.stdout.readline())
    if ready.get("opened") != count:
        raise RuntimeError(f"only {ready.get('opened')} of {count} connections opened")
    await asyncio.sleep(0.5)  # the last answers written and their buffers let go
    report()
    holder.stdin.close()
    await holder.wait()


def _measured(count: int, into: dict[str, Any]) -> tuple[Callable[[], None], Callable[[], None]]:
    snapshots: list[tracemalloc.Snapshot] = []

    def before() -> None:
        gc.collect()
        snapshots.append(tracemalloc.take_snapshot())

    def after() -> None:
        gc.collect()
        diff = tracemalloc.take_snapshot().compare_to(snapshots[0], "filename")
        into["bytes_per_connection"] = round(sum(d.size_diff for d in diff) / count)
        into["by_file"] = {
            d.traceback[0].filename.rsplit("/", 2)[-1]: round(d.size_diff / count)
            for d in diff[:8]
            if d.size_diff > 0
        }

    return before, after


async def _forwarder(broker: tuple[str, int], count: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    before, after = _measured(count, out)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(partial(ForwardedClient, *broker), "127.0.0.1", 0)
    before()
    await _hold(server.sockets[0].getsockname()[1], count, after)
    server.close()
    await server.wait_closed()
    return out


async def _kproxy(bootstrap: str, count: int, events: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    before, after = _measured(count, out)
    settings = parse_config(
        {
            "cluster": {"bootstrap_servers": [bootstrap]},
            "listeners": {"bind_host": "127.0.0.1", "advertised_host": "127.0.0.1"},
            "admin": {"enabled": False},
            "events": {"dir": str(events)},
        }
    )
    stop = Stop()

    async def started(running: Running) -> None:
        before()
        await _hold(running.proxy.bootstrap_port, count, after)
        stop.set()

    await serve(settings, stop, started)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument(
        "--standard-loop",
        action="store_true",
        help="both proxies on the standard asyncio loop instead of uvloop",
    )
    args = ap.parse_args(argv)
    loop_run = asyncio.run if args.standard_loop else uvloop.run
    results: dict[str, dict[str, Any]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="kproxy-floor-") as tmp,
        TansuBroker(workdir=Path(tmp)) as broker,
    ):
        bootstrap = broker.bootstrap
        host, _, port = bootstrap.rpartition(":")
        runs: dict[str, Callable[[], Coroutine[Any, Any, dict[str, Any]]]] = {
            "forwarder": lambda: _forwarder((host, int(port)), args.connections),
            "kproxy": lambda: _kproxy(bootstrap, args.connections, Path(tmp) / "events"),
        }
        tracemalloc.start()
        for name, run in runs.items():
            results[name] = loop_run(run())
        tracemalloc.stop()
    for name, result in results.items():
        print(f"{name}: {result['bytes_per_connection']:,} B per idle connection (traced)")
        for file, size in result["by_file"].items():
            print(f"  {size:6,} B  {file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
