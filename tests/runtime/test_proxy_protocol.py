"""`listeners.proxy_protocol` on both event loops, over real loopback sockets in front of
a scripted broker (kio-encoded answers): the address a trusted header carries is the
client's for the per-IP cap and the log lines, with or without TLS after it; a header
from an untrusted address, a malformed or truncated one, or none where one is required
closes that connection alone, with a log line and a metric. Headers are written from
HAProxy's specification by hand; tests/integration/test_proxy_protocol.py has haproxy
itself send them."""

from __future__ import annotations

import asyncio
import logging
import ssl
import struct
from pathlib import Path
from typing import Any

import pytest
from kio.schema.metadata.v12.response import MetadataResponse

from kproxy.config.settings import parse_config
from kproxy.runtime.proxy import Proxy
from tests.kio_support import decode_response_frame
from tests.runtime.loops import (
    DEADLINE,
    LOOPS,
    config_for,
    metadata_exchange,
    run_on,
    scripted_broker,
    serving,
)
from tests.tls_material import TlsMaterial

V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"


def v1(source: str, port: int) -> bytes:
    return f"PROXY TCP4 {source} 127.0.0.1 {port} 9092\r\n".encode()


def v2(source: str, port: int) -> bytes:
    addresses = bytes(int(b) for b in source.split(".")) + bytes([127, 0, 0, 1])
    body = addresses + struct.pack(">HH", port, 9092)
    return V2_SIGNATURE + b"\x21\x11" + struct.pack(">H", len(body)) + body


def proxy_config(broker_port: int, loop_name: str, tmp: Path, **proxy_protocol: Any) -> Any:
    config = config_for(broker_port, loop_name, str(tmp))
    config["listeners"]["proxy_protocol"] = {"trusted_networks": ["127.0.0.0/8"], **proxy_protocol}
    return config


async def exchange(port: int, first: bytes, corr: int = 1) -> MetadataResponse:
    """A connection that sends `first`, then one Metadata request, and reads the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(first)
        frame = await metadata_exchange(reader, writer, corr, "proxied")
        return decode_response_frame(MetadataResponse, frame)[1]
    finally:
        writer.close()


async def refused(port: int, first: bytes, close: bool = False) -> None:
    """A connection that sends `first` (and closes, if `close`): kproxy closes it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(first)
    if close:
        writer.write_eof()
        assert await reader.read() == b""
    else:
        with pytest.raises((asyncio.IncompleteReadError, ConnectionError)):
            await metadata_exchange(reader, writer, 9, "refused")
    writer.close()


async def counted(observer: Any, reason: str, n: int) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    name = "kproxy_proxy_protocol_errors_total"
    while observer.metrics.value(name, {"reason": reason}) != n:
        assert loop.time() < deadline, (reason, observer.metrics.value(name, {"reason": reason}))
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("loop_name", LOOPS)
@pytest.mark.parametrize("header", [v1, v2], ids=["v1", "v2"])
def test_a_trusted_header_names_the_client_for_the_per_ip_cap(
    loop_name: str, header: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            config = proxy_config(broker_port, loop_name, tmp_path)
            config["limits"] = {"max_connections_per_client_ip": 1}
            async with serving(parse_config(config)) as (proxy, _):
                port = proxy.bootstrap_port
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(header("192.0.2.10", 40001))
                await metadata_exchange(reader, writer, 1, "first")
                assert dict(proxy.registry.per_ip) == {"192.0.2.10": 1}
                # The same client again, through the same balancer: over its cap.
                await refused(port, header("192.0.2.10", 40002))
                assert "refusing client 192.0.2.10:40002 on bootstrap: client_ip_limit" in (
                    caplog.text
                )
                # Another client through the same balancer address is served.
                assert (await exchange(port, header("192.0.2.11", 40003), 3)).brokers
                writer.close()

    run_on(loop_name, main)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_bad_headers_close_their_connection_alone(loop_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            config = proxy_config(broker_port, loop_name, tmp_path)
            async with serving(parse_config(config)) as (proxy, observer):
                port = proxy.bootstrap_port
                # A client served all along, its connection open throughout.
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(v2("192.0.2.20", 1))
                await metadata_exchange(reader, writer, 1, "steady")
                # No header where one is required: a Kafka request first, whole or not.
                await refused(port, b"")
                await refused(port, metadata_request_frame())
                await counted(observer, "missing", 2)
                await refused(port, b"PROXY TCP4 not-an-ip 127.0.0.1 1 2\r\n")
                await refused(port, V2_SIGNATURE + b"\x21\x31\x00\x00")  # a UNIX family
                await counted(observer, "malformed", 2)
                await refused(port, v2("192.0.2.21", 1)[:20], close=True)
                await counted(observer, "truncated", 1)
                await metadata_exchange(reader, writer, 2, "steady")  # still served
                writer.close()

    run_on(loop_name, main)


def metadata_request_frame() -> bytes:
    """A Kafka request as a client without a balancer sends it first."""
    return struct.pack(">ihhih", 10, 3, 1, 7, 0)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_an_untrusted_sender_and_an_optional_header(loop_name: str, tmp_path: Path) -> None:
    """From outside trusted_networks a header closes the connection; with mode optional a
    connection without one is served as it comes."""

    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            config = proxy_config(
                broker_port, loop_name, tmp_path, mode="optional", trusted_networks=["10.0.0.0/8"]
            )
            async with serving(parse_config(config)) as (proxy, observer):
                port = proxy.bootstrap_port
                await refused(port, v1("192.0.2.30", 1))
                await counted(observer, "untrusted", 1)
                assert (await exchange(port, b"")).brokers  # no header: the peer's own address

    run_on(loop_name, main)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_the_header_comes_before_the_tls_handshake(
    loop_name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    certs = TlsMaterial(tmp_path / "certs")
    served = certs.proxy()
    context = ssl.create_default_context(cafile=str(certs.proxy_ca_file))

    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            config = proxy_config(broker_port, loop_name, tmp_path)
            config["listeners"]["tls"] = {
                "certificate": str(served.certificate),
                "key": str(served.key),
            }
            config["limits"] = {"max_connections_per_client_ip": 1}
            async with serving(parse_config(config)) as (proxy, _):
                port = proxy.bootstrap_port
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(v2("192.0.2.40", 1))
                await writer.drain()
                await writer.start_tls(context, server_hostname="127.0.0.1")
                frame = await metadata_exchange(reader, writer, 1, "tls")
                assert decode_response_frame(MetadataResponse, frame)[1].brokers
                assert dict(proxy.registry.per_ip) == {"192.0.2.40": 1}
                writer.close()

    run_on(loop_name, main)


def test_the_proxy_is_built_with_the_setting(tmp_path: Path) -> None:
    """Mode off reads no header, as no section does."""

    async def main() -> None:
        settings = parse_config(proxy_config(1, "asyncio", tmp_path, mode="off"))
        assert Proxy(settings).services.proxy_protocol is None
        settings = parse_config(proxy_config(1, "asyncio", tmp_path, mode="optional"))
        protocol = Proxy(settings).services.proxy_protocol
        assert protocol is not None and protocol.mode == "optional"

    run_on("asyncio", main)
