"""kproxy's real runtime in this process, on uvloop or the standard loop: its settings
in front of a scripted broker, started and stopped around a test's coroutine, and a
Metadata round trip through it.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.metadata.v12.response import MetadataResponse

from kproxy.config.settings import Settings, parse_config
from kproxy.observe.observability import Observability
from kproxy.runtime.loop import new_event_loop
from kproxy.runtime.proxy import Proxy
from tests.kio_support import decode_response_frame, encode_request_frame
from tests.metadata_broker import metadata_broker

LOOPS = ["uvloop", "asyncio"]
ADVERTISED = "broker-1.runtime.invalid"
DEADLINE = 10.0


def run_on(loop_name: str, main: Callable[[], Awaitable[None]]) -> None:
    loop = new_event_loop(loop_name)
    try:
        loop.run_until_complete(asyncio.wait_for(main(), 60))
        assert type(loop).__module__.startswith("uvloop") == (loop_name == "uvloop")
    finally:
        loop.close()


def scripted_broker(seen: list[int]) -> AbstractAsyncContextManager[int]:
    """Answers every Metadata request with one broker, ADVERTISED:<its own port>."""
    return metadata_broker(lambda port: [(1, ADVERTISED, port)], seen)


def config_for(broker_port: int, loop_name: str, tmp_events: str) -> dict[str, Any]:
    """kproxy in front of the scripted broker, on OS-chosen ports, admin and events off."""
    return {
        "cluster": {
            "bootstrap_servers": [f"127.0.0.1:{broker_port}"],
            "dial_overrides": {ADVERTISED: "127.0.0.1"},
        },
        "listeners": {"bootstrap_port": 0, "broker_port_base": 0},
        "admin": {"enabled": False},
        "events": {"enabled": False, "dir": tmp_events},
        "runtime": {"event_loop": loop_name},
    }


def settings_for(broker_port: int, loop_name: str, tmp_events: str) -> Settings:
    return parse_config(config_for(broker_port, loop_name, tmp_events))


@asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[tuple[Proxy, Observability]]:
    """kproxy started on the running loop, stopped and its observer closed after."""
    observer = Observability(settings, runtime_collectors=False)
    proxy = Proxy(settings, observer)
    await proxy.start()
    try:
        yield proxy, observer
    finally:
        await proxy.stop(0.5)
        observer.close()


async def metadata_exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, corr: int, client_id: str
) -> bytes:
    """One Metadata request on an open connection: the answer's whole frame."""
    request = MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    writer.write(encode_request_frame(request, corr, client_id))
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return struct.pack(">i", size) + await reader.readexactly(size)


async def metadata_round_trip(
    port: int, corr: int, tls: ssl.SSLContext | None = None, server_name: str | None = None
) -> MetadataResponse:
    """One Metadata request and its answer, in plaintext or over TLS (naming
    `server_name`: the address checked, and the SNI name sent)."""
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=tls, server_hostname=server_name if tls is not None else None
    )
    try:
        frame = await metadata_exchange(reader, writer, corr, "runtime-test")
        got_corr, msg = decode_response_frame(MetadataResponse, frame)
        assert got_corr == corr
        assert isinstance(msg, MetadataResponse)
        return msg
    finally:
        writer.close()
