"""A client's address as kproxy logs and counts it, over IPv6 loopback.

kproxy listens on ::1 in front of a scripted broker (answers encoded by kio). A client
over IPv6 is served; a second one from the same address, over the per-IP cap, is
refused, and the log line names it as a Kafka operator writes an IPv6 address with its
port: in brackets (`[::1]:5000`, never the ambiguous `::1:5000`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kproxy.config.settings import parse_config
from kproxy.observe.observability import Observability
from kproxy.runtime.proxy import Proxy
from tests.runtime.loops import (
    DEADLINE,
    LOOPS,
    config_for,
    metadata_exchange,
    run_on,
    scripted_broker,
)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_an_ipv6_client_is_served_then_refused_over_its_cap_by_its_bracketed_address(
    loop_name: str, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        async with scripted_broker([]) as broker_port:
            config = config_for(broker_port, loop_name, str(tmp_path))
            config["listeners"]["bind_host"] = "::1"
            config["limits"] = {"max_connections_per_client_ip": 1}
            settings = parse_config(config)
            observer = Observability(settings, runtime_collectors=False)
            proxy = Proxy(settings, observer)
            await proxy.start()
            try:
                reader, writer = await asyncio.open_connection("::1", proxy.bootstrap_port)
                assert len(await metadata_exchange(reader, writer, 1, "ipv6-client")) > 4
                assert proxy.registry.per_ip == {"::1": 1}

                over_reader, over_writer = await asyncio.open_connection(
                    "::1", proxy.bootstrap_port
                )
                over_port = over_writer.get_extra_info("sockname")[1]
                assert await asyncio.wait_for(over_reader.read(), DEADLINE) == b""
                over_writer.close()
                refusals = [
                    r.getMessage() for r in caplog.records if "refusing client" in r.getMessage()
                ]
                assert refusals == [
                    f"refusing client [::1]:{over_port} on bootstrap: client_ip_limit"
                ]
                writer.close()
            finally:
                await proxy.stop(0.5)
                observer.close()

    with caplog.at_level(logging.WARNING, logger="kproxy"):
        run_on(loop_name, main)
