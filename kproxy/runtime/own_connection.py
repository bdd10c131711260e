"""kproxy's own connections to the cluster: ApiVersions, SASL, then Metadata
(discovery) or any request by its layout (a switchover's transaction aborts).

Clients' connections never carry a request kproxy made: these are separate connections,
one per discovery round (or task), closed after the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from kproxy.protocol.errors import ProtocolError
from kproxy.protocol.frames import FrameReader
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.layout_codec import Value
from kproxy.protocol.own_messages import own_request, own_response
from kproxy.protocol.requests import metadata_v1_request
from kproxy.protocol.sasl_messages import (
    api_versions_error,
    api_versions_v0_request,
    sasl_authenticate_answer,
    sasl_authenticate_v1_request,
    sasl_handshake_answer,
    sasl_handshake_v1_request,
)
from kproxy.protocol.walker import Endpoint, walk
from kproxy.runtime.describe import describe
from kproxy.runtime.mapping import DialTarget, cluster_target
from kproxy.runtime.sasl import SaslFailed, SaslSession
from kproxy.runtime.tls import failure_text as tls_failure_text

if TYPE_CHECKING:
    from kproxy.config.sasl import ClusterSaslSettings
    from kproxy.config.settings import ClusterSettings

__all__ = [
    "UNANSWERED", "Exchange", "MetadataRefused", "ask_bootstrap", "fetch_brokers",
    "own_exchange", "why_unanswered",
]  # fmt: skip

METADATA = 3
# What one of kproxy's own requests may end with instead of an answer.
UNANSWERED = (TimeoutError, OSError, ProtocolError, SaslFailed)


def why_unanswered(exc: BaseException) -> str:
    """Why a cluster did not answer one of kproxy's own requests (one of `UNANSWERED`),
    for a log line."""
    if isinstance(exc, ssl.SSLError):
        return f"TLS: {tls_failure_text(exc)}"
    if isinstance(exc, SaslFailed):
        return f"authentication failed: {exc}"
    return describe(exc)


class MetadataRefused(ConnectionError):
    """The cluster answered ApiVersions, then closed kproxy's Metadata request: a SASL
    listener and no `cluster.sasl` (a broker drops any request but ApiVersions and SASL
    before authentication)."""


class Exchange:
    """One of kproxy's own connections: a request out, its response frame back."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, max_frame_bytes: int
    ) -> None:
        self.reader, self.writer = reader, writer
        self.frames = FrameReader(max_frame_bytes)
        self.correlation_id = 0

    def next_id(self) -> int:
        self.correlation_id += 1
        return self.correlation_id

    async def ask(self, request: bytes) -> memoryview:
        self.writer.write(request)
        await self.writer.drain()
        while True:
            data = await self.reader.read(65536)
            if not data:
                raise ConnectionError("broker closed the connection before answering")
            got = self.frames.feed(data)
            if got:
                return memoryview(got[0])

    async def ask_value(self, api_key: int, version: int, value: Value) -> Value:
        """A request written by its layout, its response read by its own."""
        request = own_request(api_key, version, self.next_id(), value)
        return own_response(await self.ask(request), api_key, version)


async def _authenticate(exchange: Exchange, sasl: ClusterSaslSettings) -> None:
    """SaslHandshake v1, then SaslAuthenticate v1 rounds (KIP-152) until done."""
    mechanism = sasl.mechanism
    shake = sasl_handshake_answer(
        await exchange.ask(sasl_handshake_v1_request(exchange.next_id(), mechanism))
    )
    if shake.error_code != 0:
        enabled = ", ".join(shake.mechanisms) or "none"
        raise SaslFailed(f"the broker does not offer {mechanism} (it offers: {enabled})")
    session = SaslSession(sasl)
    message: bytes | None = session.first()
    while message is not None:
        answer = sasl_authenticate_answer(
            await exchange.ask(sasl_authenticate_v1_request(exchange.next_id(), message))
        )
        if answer.error_code != 0:
            raise SaslFailed(f"{mechanism}: {answer.error_message or f'error {answer.error_code}'}")
        message = session.next(answer.auth_bytes)


async def fetch_brokers(
    target: DialTarget,
    max_frame_bytes: int,
    tls: ssl.SSLContext | None,
    sasl: ClusterSaslSettings | None = None,
    reachable: Callable[[], None] | None = None,
) -> list[Endpoint]:
    """kproxy's own Metadata request: the cluster's brokers as the bootstrap sees them."""
    async with own_exchange(target, max_frame_bytes, tls, sasl, reachable) as exchange:
        try:
            frame = await exchange.ask(metadata_v1_request(exchange.next_id()))
        except ConnectionError as exc:
            if sasl is None:
                raise MetadataRefused(str(exc)) from None
            raise
        _, body = parse_response_header(frame, 0)
        return walk(frame, body, METADATA, 1, False).endpoints


async def ask_bootstrap(
    cluster: ClusterSettings,
    tls: ssl.SSLContext | None,
    max_frame_bytes: int,
    api_key: int,
    version: int,
    value: Value,
    seconds: float | None = None,
) -> Value:
    """One request by its layout, answered by the first of `cluster`'s bootstrap servers
    that answers it (each given `seconds`, if set); raises what the last one raised."""
    servers = cluster.bootstrap_servers
    for index, (host, port) in enumerate(servers):
        target = cluster_target(cluster, host, port)
        try:
            async with asyncio.timeout(seconds):
                async with own_exchange(target, max_frame_bytes, tls, cluster.sasl) as exchange:
                    return await exchange.ask_value(api_key, version, value)
        except UNANSWERED:
            if index == len(servers) - 1:
                raise
    raise ConnectionError("the cluster names no bootstrap server")


@contextlib.asynccontextmanager
async def own_exchange(
    target: DialTarget,
    max_frame_bytes: int,
    tls: ssl.SSLContext | None,
    sasl: ClusterSaslSettings | None = None,
    reachable: Callable[[], None] | None = None,
) -> AsyncIterator[Exchange]:
    """One of kproxy's own connections, ready for requests (closed on exit).

    ApiVersions first: a broker answers it before authentication, so `reachable` is
    called once the cluster is known to be there, whether or not kproxy may ask more."""
    reader, writer = await asyncio.open_connection(
        target.host,
        target.port,
        ssl=tls,
        server_hostname=target.name if tls is not None else None,
    )
    try:
        exchange = Exchange(reader, writer, max_frame_bytes)
        api_versions_error(await exchange.ask(api_versions_v0_request(exchange.next_id())))
        if reachable is not None:
            reachable()
        if sasl is not None:
            await _authenticate(exchange, sasl)
        yield exchange
    finally:
        writer.close()
