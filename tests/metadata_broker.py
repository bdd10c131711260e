"""A listener that answers every Metadata request (any version kio knows) with a fixed
broker list, and ApiVersions (discovery's probe) with Metadata's range, encoded by kio:
the cluster that discovery and the admin server meet in tests without a real broker."""

from __future__ import annotations

import asyncio
import datetime
import struct
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from kio.schema.errors import ErrorCode

from tests.kio_build import Sub, build
from tests.kio_support import decode_request_frame, encode_response_frame, kio_message_class

Brokers = list[tuple[int, str, int]]  # (node id, advertised host, port)


def metadata_answer(version: int, brokers: Brokers) -> Any:
    cls = kio_message_class(3, version, "response")
    assert cls is not None, f"kio has no Metadata v{version} response"
    return build(
        cls,
        throttle_time=datetime.timedelta(0),
        brokers=Sub(
            lambda c: tuple(build(c, node_id=n, host=h, port=p, rack=None) for n, h, p in brokers)
        ),
        cluster_id="scripted",
        controller_id=brokers[0][0],
        topics=(),
    )


def api_versions_answer(version: int) -> Any:
    cls = kio_message_class(18, version, "response")
    assert cls is not None, f"kio has no ApiVersions v{version} response"
    return build(
        cls,
        error_code=ErrorCode.none,
        api_keys=Sub(lambda c: (build(c, api_key=3, min_version=0, max_version=12),)),
        throttle_time=datetime.timedelta(0),
    )


@asynccontextmanager
async def metadata_broker(
    brokers: Callable[[int], Brokers], seen: list[int] | None = None
) -> AsyncIterator[int]:
    """Serve on an OS-chosen loopback port; `brokers(port)` gives the answer's brokers.

    Yields the port; every request's api key is appended to `seen`.
    """
    port: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = struct.pack(">i", size) + await reader.readexactly(size)
                api_key, version, corr, _client, _msg = decode_request_frame(frame)
                if seen is not None:
                    seen.append(api_key)
                assert api_key in (3, 18), f"only Metadata is scripted, not api {api_key}"
                answer = (
                    metadata_answer(version, brokers(port[0]))
                    if api_key == 3
                    else api_versions_answer(version)
                )
                writer.write(encode_response_frame(answer, corr))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port.append(server.sockets[0].getsockname()[1])
    try:
        yield port[0]
    finally:
        server.close()
        await server.wait_closed()
