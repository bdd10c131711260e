"""The harness's port picker never gives one test process the same port twice."""

from __future__ import annotations

from tests.peers.net import free_port, free_ports


def test_no_port_is_handed_out_twice() -> None:
    # 600 draws from the ~14,000 ports Linux gives bind(0): without the memory of what
    # was handed out, a repeat is all but certain (the birthday bound: 1 - e^-12).
    ports = [free_port() for _ in range(300)]
    for _ in range(100):
        ports += free_ports(3)
    assert len(set(ports)) == len(ports) == 600
