"""The alerting rules of deploy/prometheus/ in a real Prometheus scraping a real kproxy:
pointed at a cluster that is not there and filled past limits.max_connections, kproxy
exports what makes KproxyConnectionCapReached fire and KproxyNotReady and
KproxyBrokersUnreachable go pending (their `for` holds them there), while the rules
about trouble that did not happen stay quiet."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.kproxy_process import KproxyProcess
from tests.peers.net import free_port, wait_until
from tests.peers.prometheus import Prometheus

pytestmark = [pytest.mark.peers]

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "kproxy-alerts.yaml"


def test_alerts_follow_what_kproxy_exports(tmp_path: Path) -> None:
    (tmp_path / "kproxy").mkdir()
    (tmp_path / "prom").mkdir()
    dead_cluster = f"127.0.0.1:{free_port()}"
    kp = KproxyProcess(tmp_path / "kproxy", [dead_cluster], limits={"max_connections": 2})
    held: list[socket.socket] = []
    with (
        kp,
        Prometheus(tmp_path / "prom", [f"127.0.0.1:{kp.admin_port}"], rule_files=(RULES,)) as prom,
    ):
        try:
            for _ in range(3):
                held.append(socket.create_connection(("127.0.0.1", kp.bootstrap_port), timeout=5))
            wait_until(
                lambda: (
                    kp.metric("kproxy_connections_refused_total", reason="connection_limit") >= 1
                ),
                30,
                what="the third connection refused",
            )
            expected = {
                "KproxyConnectionCapReached": "firing",
                "KproxyNotReady": "pending",
                "KproxyBrokersUnreachable": "pending",
            }
            wait_until(
                lambda: prom.alerts() == expected,
                60,
                what=f"Prometheus's alerts to be {expected}",
                interval=0.5,
            )
        finally:
            for s in held:
                s.close()
