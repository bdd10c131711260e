"""Brokers that advertise a name this host cannot resolve, with no dial override: kproxy
says so once, at discovery, naming the nodes and `cluster.dial_overrides`; `/readyz`
fails while no node can be dialled; a client's connection that fails for it says the
same. With the override in place the same cluster is ready.

kproxy runs in-process in front of a scripted broker (kio-encoded answers) that
advertises `broker-1.runtime.invalid` (the .invalid domain never resolves, RFC 6761)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from kproxy.config.settings import parse_config
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
)


def logged(caplog: pytest.LogCaptureFixture, word: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if word in r.getMessage()]


async def until(condition: object, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    while not condition():  # type: ignore[operator]
        assert loop.time() < deadline, what
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_an_unresolvable_advertised_name_is_named_once_with_the_fix(
    loop_name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)

    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            config = config_for(broker_port, loop_name, str(tmp_path))
            del config["cluster"]["dial_overrides"]
            async with serving(parse_config(config)) as (proxy, _):
                await until(lambda: proxy.discovery.resolution.unresolved, "no resolution yet")
                ready, reason = proxy.readiness()
                assert not ready
                assert reason == (
                    f"no broker's address resolves on this host ({ADVERTISED}:{broker_port}): "
                    "set cluster.dial_overrides"
                )
                await proxy.discovery.refresh()  # a later refresh says nothing new
                said = logged(caplog, "cannot resolve")
                assert len(said) == 1
                assert f"node 1 at {ADVERTISED}:{broker_port}" in said[0]
                assert "cluster.dial_overrides" in said[0]
                # A client sent to the node gets a closed connection; the log says why.
                answer = await metadata_round_trip(proxy.bootstrap_port, 1)
                (node,) = answer.brokers
                reader, writer = await asyncio.open_connection("127.0.0.1", node.port)
                with pytest.raises(asyncio.IncompleteReadError):
                    await metadata_exchange(reader, writer, 2, "sent-to-node-1")
                writer.close()
                unreachable = logged(caplog, "unreachable")
                assert unreachable and "cluster.dial_overrides" in unreachable[0]

    run_on(loop_name, main)


def test_with_the_dial_override_the_same_cluster_is_ready(tmp_path: Path) -> None:
    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            config = config_for(broker_port, "asyncio", str(tmp_path))
            async with serving(parse_config(config)) as (proxy, _):
                await until(lambda: proxy.readiness()[0], "never ready")
                assert proxy.discovery.resolution.unresolved == {}

    run_on("asyncio", main)
