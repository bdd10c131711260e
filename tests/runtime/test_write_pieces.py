"""`write_pieces` on real transports over a loopback socket pair: the peer reads every
piece in order, and on the standard loop's copying transport the pieces go into a buffer
that holds data one by one (no joined copy of them all first) and are joined only when
the socket is empty, to leave in one send."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Callable
from typing import Any

import pytest

from kproxy.runtime.loop import new_event_loop
from kproxy.runtime.write_buffer import COPYING_TRANSPORT, write_pieces

LOOPS = ["uvloop", "asyncio"]


def on_loop(loop_name: str, body: Callable[[asyncio.Transport, socket.socket], Any]) -> None:
    """Run `body` with a transport on one end of a socket pair and the other end."""
    loop = new_event_loop(loop_name)
    ours, theirs = socket.socketpair()

    async def main() -> None:
        transport, _ = await loop.create_connection(asyncio.Protocol, sock=ours)
        try:
            await body(transport, theirs)
        finally:
            transport.close()

    try:
        loop.run_until_complete(asyncio.wait_for(main(), 30))
    finally:
        theirs.close()
        loop.close()


async def read_exactly(peer: socket.socket, count: int) -> bytes:
    loop = asyncio.get_running_loop()
    peer.setblocking(False)
    got = bytearray()
    while len(got) < count:
        got += await loop.sock_recv(peer, count - len(got))
    return bytes(got)


def record_writes(transport: asyncio.Transport) -> list[bytes]:
    """Every `write` call's bytes, from now on (the transport still writes them); on the
    copying transport only (uvloop's methods cannot be replaced)."""
    calls: list[bytes] = []
    if type(transport) is not COPYING_TRANSPORT:
        return calls
    write = transport.write

    def recording(data: Any) -> None:
        calls.append(bytes(data))
        write(data)

    transport.write = recording  # type: ignore[method-assign]
    return calls


PIECES = [b"\x00\x00\x00\x0b", memoryview(b"..header..")[2:6], memoryview(b"rest!!!")]
JOINED = b"\x00\x00\x00\x0b" + b"head" + b"rest!!!"


@pytest.mark.parametrize("loop_name", LOOPS)
def test_pieces_reach_the_peer_in_order_with_the_socket_empty(loop_name: str) -> None:
    async def body(transport: asyncio.Transport, peer: socket.socket) -> None:
        calls = record_writes(transport)
        write_pieces(transport, PIECES)
        assert await read_exactly(peer, len(JOINED)) == JOINED
        if type(transport) is COPYING_TRANSPORT:
            assert calls == [JOINED]  # one send: a 4-byte size alone would be a packet

    on_loop(loop_name, body)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_pieces_behind_unsent_bytes_are_buffered_one_by_one(loop_name: str) -> None:
    async def body(transport: asyncio.Transport, peer: socket.socket) -> None:
        transport.set_write_buffer_limits(high=64 << 20)
        backlog = bytes(range(256)) * 32768  # 8 MiB: more than the socket pair holds
        transport.write(backlog)
        assert transport.get_write_buffer_size() > 0
        calls = record_writes(transport)
        write_pieces(transport, PIECES)
        got = await read_exactly(peer, len(backlog) + len(JOINED))
        assert got == backlog + JOINED
        if type(transport) is COPYING_TRANSPORT:
            assert calls == [bytes(p) for p in PIECES]

    on_loop(loop_name, body)


def test_the_standard_loop_before_python_3_12_is_the_copying_transport() -> None:
    """Where the standard loop's transport no longer joins and copies (Python 3.12), or
    uvloop runs, pieces go to `writelines` unchanged."""

    async def body(transport: asyncio.Transport, _peer: socket.socket) -> None:
        assert (type(transport) is COPYING_TRANSPORT) == (sys.version_info < (3, 12))

    on_loop("asyncio", body)
