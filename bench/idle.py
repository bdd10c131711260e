"""The ``idle`` load of `bench.clients`: open ``--count`` connections to the first
target, send one ApiVersions v0 on each and read its answer (so that a proxy has dialled
the broker for every one of them), print a JSON line, then hold them all, idle, until
stdin is closed."""

from __future__ import annotations

import argparse
import asyncio
import json
import struct
import sys
import time
from typing import Any


def _api_versions_v0(correlation_id: int) -> bytes:
    client_id = b"kproxy-bench-idle"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


async def _open_idle(host: str, port: int, count: int, batch: int) -> list[asyncio.StreamWriter]:
    async def one(i: int) -> asyncio.StreamWriter:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(_api_versions_v0(i + 1))
        await writer.drain()
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        await reader.readexactly(size)
        return writer

    writers: list[asyncio.StreamWriter] = []
    for start in range(0, count, batch):
        writers += await asyncio.gather(*(one(i) for i in range(start, min(count, start + batch))))
    return writers


def idle(args: argparse.Namespace, targets: list[list[str]]) -> dict[str, Any]:
    host, _, port = targets[0][1].split(",")[0].rpartition(":")

    async def main() -> dict[str, Any]:
        started = time.perf_counter()
        writers = await asyncio.wait_for(_open_idle(host, int(port), args.count, 100), args.timeout)
        opened = time.perf_counter() - started
        ready = {"ready": True, "opened": len(writers), "open_seconds": opened}
        sys.stdout.write(json.dumps(ready) + "\n")
        sys.stdout.flush()
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until closed
        alive = sum(1 for w in writers if not w.is_closing())
        for w in writers:
            w.close()
        return {"opened": len(writers), "open_seconds": opened, "alive_at_end": alive}

    return asyncio.run(main())
