"""kproxy that cannot open every listener it must start with (a controller's port of a
KRaft quorum already taken) fails to start, and leaves no listener of its own open:
the bootstrap port it had opened is free again, on both event loops."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kproxy.app import Stop, serve
from kproxy.config.settings import parse_config
from tests.peers.net import free_port
from tests.runtime.loops import LOOPS, run_on


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_taken_controller_port_fails_the_start_and_closes_the_bootstrap(
    loop_name: str, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        controller_port = taken.getsockname()[1]
        bootstrap_port = free_port()
        settings = parse_config(
            {
                "cluster": {"bootstrap_servers": ["127.0.0.1:1"]},
                "listeners": {"bootstrap_port": bootstrap_port, "broker_port_base": 0},
                "quorum": {"controllers": {1: {"port": controller_port, "address": "c1:9093"}}},
                "admin": {"enabled": False},
                "events": {"enabled": False, "dir": str(tmp_path)},
                "runtime": {"event_loop": loop_name},
            }
        )

        async def main() -> None:
            with pytest.raises(OSError, match=f"{controller_port} for controller 1"):
                await serve(settings, Stop())

        run_on(loop_name, main)
    assert port_is_free(bootstrap_port), "the bootstrap listener was left open"
