"""Connection lifetimes, on both event loops, over real loopback sockets in front of a
scripted broker (kio-encoded answers): a connection past `max_connection_age_seconds`
is closed once its requests are answered, so that its client reconnects through the
load balancer (to any replica), and a client IP that opens connections faster than
`max_connection_creation_rate` is refused the extra ones."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kproxy.config.settings import parse_config
from tests.runtime.loops import (
    DEADLINE,
    LOOPS,
    config_for,
    metadata_exchange,
    run_on,
    scripted_broker,
    serving,
)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_an_old_connection_is_closed_after_its_answers(loop_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            config = config_for(broker_port, loop_name, str(tmp_path))
            config["limits"] = {"max_connection_age_seconds": 0.3, "connection_age_jitter": 0.0}
            async with serving(parse_config(config)) as (proxy, observer):
                loop = asyncio.get_running_loop()
                reader, writer = await asyncio.open_connection("127.0.0.1", proxy.bootstrap_port)
                opened = loop.time()
                corr = 0
                # Requests one after another, each answered whole, until kproxy closes.
                while True:
                    corr += 1
                    try:
                        frame = await metadata_exchange(reader, writer, corr, "aging")
                    except (asyncio.IncompleteReadError, ConnectionError):
                        break
                    assert int.from_bytes(frame[4:8], "big") == corr  # never a cut answer
                    assert loop.time() - opened < DEADLINE, "never closed for its age"
                    await asyncio.sleep(0.02)
                assert loop.time() - opened >= 0.3
                writer.close()
                closed = observer.metrics.value(
                    "kproxy_connections_closed_total", {"listener": "bootstrap", "cause": "max_age"}
                )
                assert closed == 1
                # A new connection is served as usual.
                reader, writer = await asyncio.open_connection("127.0.0.1", proxy.bootstrap_port)
                await metadata_exchange(reader, writer, 1, "again")
                writer.close()

    run_on(loop_name, main)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_connections_opened_too_fast_from_one_ip_are_refused(
    loop_name: str, tmp_path: Path
) -> None:
    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            config = config_for(broker_port, loop_name, str(tmp_path))
            config["limits"] = {"max_connection_creation_rate": 0.5}  # one each 2 s
            async with serving(parse_config(config)) as (proxy, observer):
                port = proxy.bootstrap_port
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                await metadata_exchange(reader, writer, 1, "first")
                second_reader, second = await asyncio.open_connection("127.0.0.1", port)
                with pytest.raises((asyncio.IncompleteReadError, ConnectionError)):
                    await metadata_exchange(second_reader, second, 2, "too-soon")
                second.close()
                refused = observer.metrics.value(
                    "kproxy_connections_refused_total",
                    {"listener": "bootstrap", "reason": "connection_rate"},
                )
                assert refused == 1
                await metadata_exchange(reader, writer, 3, "first")  # the first one is fine
                writer.close()

    run_on(loop_name, main)
