"""kproxy under `runtime.workers` in tests: the fixed ports every worker binds, and a
run that leaves no worker behind."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tests.kproxy_process import KproxyProcess
from tests.peers.net import free_ports, wait_until


def fixed_listeners(node_ids: Sequence[int]) -> dict[str, Any]:
    """`listeners` with every port fixed, as several workers need (none the OS chooses):
    the bootstrap port and one per node in `node_ids`; the rest of broker_port_base's
    range is never used."""
    bootstrap_port, *node_ports = free_ports(1 + len(node_ids))
    return {
        "bootstrap_port": bootstrap_port,
        "broker_port_base": 1024,
        "max_node_id": max(node_ids),
        "node_port_overrides": dict(zip(node_ids, node_ports, strict=True)),
    }


@contextlib.contextmanager
def running(proc: KproxyProcess) -> Iterator[KproxyProcess]:
    """`proc` started and ready; then stopped, and none of its workers left behind."""
    proc.start()
    workers: set[int] = set()
    try:
        wait_until(lambda: proc.admin_get("/readyz")[0] == 200, 30, what="both workers ready")
        workers.update(worker_pids(proc))
        yield proc
    finally:
        workers.update(worker_pids(proc) if proc.proc is not None else [])
        proc.stop()
        for pid in workers:  # never left behind, whatever the test did
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def worker_pids(proc: KproxyProcess) -> list[int]:
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    return [int(pid) for pid in children]
