"""A node port another process holds: kproxy keeps serving, `/readyz`'s answer says
which listener cannot open and why, the failures are counted, and once the port is
free the listener opens by itself and clients are told of the node again.

kproxy runs in-process on both event loops in front of a scripted broker (kio-encoded
answers); node 1's port is fixed (`node_port_overrides`) and held by the test."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from kproxy.config.settings import parse_config
from tests.runtime.loops import (
    DEADLINE,
    LOOPS,
    config_for,
    metadata_round_trip,
    run_on,
    scripted_broker,
    serving,
)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_taken_node_port_fails_readiness_until_it_is_free(loop_name: str, tmp_path: Path) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    node_port = holder.getsockname()[1]

    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            config = config_for(broker_port, loop_name, str(tmp_path))
            config["listeners"]["node_port_overrides"] = {1: node_port}
            async with serving(parse_config(config)) as (proxy, observer):
                deadline = asyncio.get_running_loop().time() + DEADLINE
                while proxy.listeners.get("node-1") is None:  # discovery's first refresh
                    assert asyncio.get_running_loop().time() < deadline
                    await asyncio.sleep(0.02)
                ready, reason = proxy.readiness()
                assert not ready
                assert reason.startswith(f"node-1 cannot listen on 127.0.0.1:{node_port} (")
                assert "retrying" in reason
                # Clients are told of no address for it meanwhile.
                answer = await metadata_round_trip(proxy.bootstrap_port, 1)
                assert [b.node_id for b in answer.brokers] == []
                failures = observer.metrics.value(
                    "kproxy_listener_bind_failures_total", {"listener": "node-1"}
                )
                assert failures >= 1

                holder.close()  # the port is free: the next attempt opens it
                while not proxy.readiness()[0]:
                    assert asyncio.get_running_loop().time() < deadline, proxy.readiness()
                    await asyncio.sleep(0.05)
                assert proxy.listeners.get("node-1").state == "serving"  # type: ignore[union-attr]
                answer = await metadata_round_trip(proxy.bootstrap_port, 2)
                assert [(b.node_id, b.host, b.port) for b in answer.brokers] == [
                    (1, "127.0.0.1", node_port)
                ]
                _, writer = await asyncio.open_connection("127.0.0.1", node_port)
                writer.close()
                await writer.wait_closed()

    try:
        run_on(loop_name, main)
    finally:
        holder.close()
