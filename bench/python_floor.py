"""The least a Python proxy on uvloop can do: forward bytes, parse nothing.

    python -m bench.python_floor --route PORT=HOST:PORT [--route ...] [--loop asyncio]

Each route listens on loopback PORT and forwards every connection to HOST:PORT: two
asyncio Protocols per connection, every read written straight to the other side, reading
paused while the other side's write buffer is full. No framing, no metrics, no logging.

It is a benchmark path (``python-floor``), not a proxy to run: it sits where haproxy sits
(its brokers advertise its ports), so the CPU it uses per message is what the Python
interpreter and the event loop cost before kproxy parses anything. kproxy's CPU less this
path's is kproxy's own work; this path's less haproxy's is the price of Python itself.
With ``--loop asyncio`` it runs on the standard asyncio loop, the floor beside kproxy on
that loop (``python -m bench ab --python-floor --standard-loop``).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from functools import partial
from typing import cast


class ForwardedSide(asyncio.Protocol):
    """One end of a forwarded connection; ``peer`` is the other end. Slots, and nothing
    allocated until needed: `bench.connection_floor` counts what an idle one holds."""

    __slots__ = ("peer", "pending", "transport")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: ForwardedSide | None = None
        self.pending: list[bytes] | None = None  # read before the broker side was there

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is not None and peer.transport is not None:
            peer.transport.write(data)
        elif self.pending is None:
            self.pending = [data]
        else:
            self.pending.append(data)

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()


class ForwardedClient(ForwardedSide):
    """The client's end: dials ``backend`` as it is accepted."""

    __slots__ = ("backend",)

    def __init__(self, host: str, port: int) -> None:
        super().__init__()
        self.backend = (host, port)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        asyncio.get_running_loop().create_task(self._dial())

    async def _dial(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, upstream = await loop.create_connection(ForwardedSide, *self.backend)
        except OSError:
            if self.transport is not None:
                self.transport.close()
            return
        assert upstream.transport is not None
        if self.transport is None or self.transport.is_closing():
            upstream.transport.close()  # the client left while its broker side was dialled
            return
        upstream.peer, self.peer = self, upstream
        if self.pending is not None:
            upstream.transport.writelines(self.pending)
            self.pending = None


async def _serve(routes: list[tuple[int, str, int]]) -> None:
    loop = asyncio.get_running_loop()
    servers = [
        await loop.create_server(partial(ForwardedClient, host, port), "127.0.0.1", listen)
        for listen, host, port in routes
    ]
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    for server in servers:
        server.close()


def _route(text: str) -> tuple[int, str, int]:
    listen, _, backend = text.partition("=")
    host, _, port = backend.rpartition(":")
    return int(listen), host, int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.python_floor")
    parser.add_argument("--route", type=_route, action="append", required=True)
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    args = parser.parse_args(argv)
    if args.loop == "uvloop":
        import uvloop  # only then: the peer checks which loop's library it has mapped

        uvloop.run(_serve(args.route))
    else:
        asyncio.run(_serve(args.route))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
