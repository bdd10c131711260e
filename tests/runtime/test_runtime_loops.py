"""The asyncio runtime on both event loops: uvloop and the standard one.

kproxy runs in-process on the loop `runtime.event_loop` names, in front of a scripted
broker whose every answer is encoded by kio. A client over real loopback sockets is
told kproxy's node address (the listener opened before the answer was written), is
served on that node port, and a client sending garbage is closed without disturbing
the others.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from kio.schema.metadata.v12.response import MetadataResponse

from kproxy.config.settings import parse_config
from kproxy.runtime.client import ClientConnection
from kproxy.runtime.proxy import Proxy
from tests.metadata_broker import metadata_broker
from tests.runtime.loops import (
    ADVERTISED,
    DEADLINE,
    LOOPS,
    config_for,
    metadata_exchange,
    metadata_round_trip,
    run_on,
    scripted_broker,
    serving,
    settings_for,
)
from tests.tls_material import TlsMaterial


@pytest.mark.parametrize("loop_name", LOOPS)
def test_client_is_served_through_a_node_listener(loop_name: str, tmp_path: Any) -> None:
    async def main() -> None:
        seen: list[int] = []
        async with scripted_broker(seen) as broker_port:
            settings = settings_for(broker_port, loop_name, str(tmp_path))
            async with serving(settings) as (proxy, _observer):
                answer = await metadata_round_trip(proxy.bootstrap_port, 7)
                (broker,) = answer.brokers
                node_port = proxy.listeners.by_name["node-1"].port
                assert (broker.node_id, broker.host, broker.port) == (1, "127.0.0.1", node_port)
                again = await metadata_round_trip(node_port, 8)
                assert again.brokers[0].port == node_port
                ready, reason = proxy.readiness()
                assert ready, reason
                assert seen.count(3) >= 2

    run_on(loop_name, main)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_garbage_closes_only_its_own_connection(loop_name: str, tmp_path: Any) -> None:
    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            settings = settings_for(broker_port, loop_name, str(tmp_path))
            async with serving(settings) as (proxy, observer):
                healthy_reader, healthy_writer = await asyncio.open_connection(
                    "127.0.0.1", proxy.bootstrap_port
                )
                bad_reader, bad_writer = await asyncio.open_connection(
                    "127.0.0.1", proxy.bootstrap_port
                )
                bad_writer.write(b"GET / HTTP/1.1\r\n\r\n")
                assert await asyncio.wait_for(bad_reader.read(), DEADLINE) == b""
                bad_writer.close()
                errors = observer.metrics.value(
                    "kproxy_frame_errors_total", {"side": "client", "reason": "http_on_kafka_port"}
                )
                assert errors == 1
                frame = await metadata_exchange(healthy_reader, healthy_writer, 1, "healthy")
                assert len(frame) > 4
                healthy_writer.close()

    run_on(loop_name, main)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_tls_clients_are_served_and_a_failed_handshake_is_counted(
    loop_name: str, tmp_path: Any
) -> None:
    """TLS on kproxy's listeners on both loops: the client speaks at once after
    connecting (the ClientHello may arrive before kproxy's first callback; uvloop starts
    reading right after `connection_made`), is served on the bootstrap and node ports,
    and a client without the required certificate is refused and counted."""
    certs = TlsMaterial(tmp_path / "certs")
    served, client = certs.proxy(), certs.client()
    context = ssl.create_default_context(cafile=str(certs.proxy_ca_file))
    context.load_cert_chain(str(client.certificate), str(client.key))
    bare = ssl.create_default_context(cafile=str(certs.proxy_ca_file))

    async def tls_round_trip(port: int, corr: int, ctx: ssl.SSLContext) -> MetadataResponse:
        return await metadata_round_trip(port, corr, ctx, "127.0.0.1")

    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            settings = parse_config(
                {
                    "admin": {"enabled": False},
                    "events": {"enabled": False, "dir": str(tmp_path)},
                    "runtime": {"event_loop": loop_name},
                    "cluster": {
                        "bootstrap_servers": [f"127.0.0.1:{broker_port}"],
                        "dial_overrides": {ADVERTISED: "127.0.0.1"},
                    },
                    "listeners": {
                        "bootstrap_port": 0,
                        "broker_port_base": 0,
                        "tls": {
                            "certificate": str(served.certificate),
                            "key": str(served.key),
                            "client_ca": str(certs.proxy_ca_file),
                        },
                    },
                }
            )
            async with serving(settings) as (proxy, observer):
                answer = await tls_round_trip(proxy.bootstrap_port, 3, context)
                node_port = proxy.listeners.by_name["node-1"].port
                assert answer.brokers[0].port == node_port
                assert (await tls_round_trip(node_port, 4, context)).brokers[0].port == node_port
                with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
                    await tls_round_trip(proxy.bootstrap_port, 5, bare)
                failures = observer.metrics.value(
                    "kproxy_tls_handshake_failures_total",
                    {"side": "client", "reason": "no_certificate"},
                )
                assert failures == 1

    run_on(loop_name, main)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_sni_serves_every_node_on_one_port_by_name(loop_name: str, tmp_path: Any) -> None:
    """listeners.sni: the bootstrap and each node are one TLS port, told apart by the
    server name; a node the cluster adds later is served with no configuration; an
    unknown name and no name are refused with a TLS alert and counted."""
    certs = TlsMaterial(tmp_path / "certs")
    served = certs.proxy("sni", "*.kproxy.test")
    context = ssl.create_default_context(cafile=str(certs.proxy_ca_file))
    brokers: list[tuple[int, str, int]] = []

    async def by_name(port: int, name: str | None, corr: int) -> MetadataResponse:
        ctx = context
        if name is None:
            ctx = ssl.create_default_context(cafile=str(certs.proxy_ca_file))
            ctx.check_hostname = False
        return await metadata_round_trip(port, corr, ctx, name)

    async def main() -> None:
        seen: list[int] = []
        async with metadata_broker(lambda port: list(brokers), seen) as broker_port:
            brokers.append((1, ADVERTISED, broker_port))
            settings = parse_config(
                {
                    "cluster": {
                        "bootstrap_servers": [f"127.0.0.1:{broker_port}"],
                        "dial_overrides": {
                            ADVERTISED: "127.0.0.1",
                            "broker-7.runtime.invalid": "127.0.0.1",
                        },
                    },
                    "listeners": {
                        "bootstrap_port": 0,
                        "tls": {"certificate": str(served.certificate), "key": str(served.key)},
                        "sni": {
                            "bootstrap_host": "bootstrap.kproxy.test",
                            "node_host_pattern": "broker-{node_id}.kproxy.test",
                        },
                    },
                    "admin": {"enabled": False},
                    "events": {"enabled": False, "dir": str(tmp_path)},
                    "runtime": {"event_loop": loop_name},
                }
            )
            async with serving(settings) as (proxy, observer):
                port = proxy.bootstrap_port
                answer = await by_name(port, "bootstrap.kproxy.test", 1)
                assert [(b.node_id, b.host, b.port) for b in answer.brokers] == [
                    (1, "broker-1.kproxy.test", port)
                ]
                assert list(proxy.listeners.by_name) == ["bootstrap"]  # no port per node
                through_node = len(seen)
                await by_name(port, "broker-1.kproxy.test", 2)
                assert len(seen) > through_node

                # The cluster grows: node 7 is served by name at once.
                brokers.append((7, "broker-7.runtime.invalid", broker_port))
                answer = await by_name(port, "BROKER-7.kproxy.test", 3)
                assert (7, "broker-7.kproxy.test", port) in {
                    (b.node_id, b.host, b.port) for b in answer.brokers
                }

                for name in ("broker-x.kproxy.test", "kafka.example.com", None):
                    with pytest.raises((ssl.SSLError, ConnectionError)):
                        await by_name(port, name, 4)
                refused = observer.metrics.value(
                    "kproxy_tls_handshake_failures_total",
                    {"side": "client", "reason": "unknown_server_name"},
                )
                assert refused == 3
                topology = {n["id"]: n["kproxy"] for n in proxy.topology()["nodes"]}
                assert topology == {
                    1: f"broker-1.kproxy.test:{port}",
                    7: f"broker-7.kproxy.test:{port}",
                }

    run_on(loop_name, main)


def _nodelay(transport: asyncio.BaseTransport | None) -> int:
    assert transport is not None
    sock = transport.get_extra_info("socket")
    return int(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


@asynccontextmanager
async def held_connections(proxy: Proxy) -> AsyncIterator[list[ClientConnection]]:
    """kproxy's side of two client connections held open, one on the bootstrap listener
    and one on a node listener, each past its first request (its broker dialled)."""
    ports = [proxy.bootstrap_port, proxy.listeners.by_name["node-1"].port]
    held = [await asyncio.open_connection("127.0.0.1", port) for port in ports]
    try:
        client_ports: set[int] = set()
        for corr, (reader, writer) in enumerate(held, start=2):
            await metadata_exchange(reader, writer, corr, "held-open")
            client_ports.add(writer.get_extra_info("sockname")[1])
        # kproxy's side of each held connection, found by the client's port.
        ours = [
            c
            for c in proxy.registry.connections
            if isinstance(c, ClientConnection)
            and c.address is not None
            and c.address[1] in client_ports
        ]
        assert len(ours) == len(held)
        yield ours
    finally:
        for _reader, writer in held:
            writer.close()


@pytest.mark.parametrize("loop_name", LOOPS)
def test_nagle_is_off_on_both_sides_of_every_connection(loop_name: str, tmp_path: Any) -> None:
    """Every socket kproxy holds for a connection, the client's (accepted on the
    bootstrap and on a node listener) and the broker's, has TCP_NODELAY set: with Nagle
    on, the last small write of a burst waits for the peer's delayed ACK (40 ms). The
    standard loop sets it only on accepted sockets whose protocol is IPPROTO_TCP."""

    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            settings = settings_for(broker_port, loop_name, str(tmp_path))
            async with serving(settings) as (proxy, _observer):
                await metadata_round_trip(proxy.bootstrap_port, 1)
                async with held_connections(proxy) as ours:
                    for conn in ours:
                        assert _nodelay(conn.transport) == 1
                        assert conn.upstream is not None
                        assert _nodelay(conn.upstream.transport) == 1

    run_on(loop_name, main)


@pytest.mark.parametrize("loop_name", LOOPS)
@pytest.mark.parametrize("configured", [4 << 20, 32 << 10])
def test_write_buffers_hold_what_the_loop_keeps_without_copying(
    loop_name: str, configured: int, tmp_path: Any
) -> None:
    """Both transports of a connection stop the other side at
    `limits.write_buffer_high_bytes` on uvloop, which keeps unsent bytes by reference;
    on the standard loop before Python 3.12, which copies them, at 64 KiB at most."""
    bound = configured
    if loop_name == "asyncio" and sys.version_info < (3, 12):
        bound = min(configured, 64 << 10)

    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            config = config_for(broker_port, loop_name, str(tmp_path))
            config["limits"] = {"write_buffer_high_bytes": configured}
            async with serving(parse_config(config)) as (proxy, _observer):
                await metadata_round_trip(proxy.bootstrap_port, 1)
                async with held_connections(proxy) as ours:
                    for conn in ours:
                        assert conn.transport is not None and conn.upstream is not None
                        assert conn.upstream.transport is not None
                        assert conn.transport.get_write_buffer_limits()[1] == bound
                        assert conn.upstream.transport.get_write_buffer_limits()[1] == bound

    run_on(loop_name, main)
