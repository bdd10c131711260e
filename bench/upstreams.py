"""The clusters a benchmark run sends its load to, and the paths in front of them.

Three upstreams, each started by the harness on loopback (docs/peers.md):

``tansu``  the Tansu broker (Rust, in-memory storage): data-path throughput and latency.
``kafka``  a one-node Apache Kafka KRaft cluster from Maven Central: the real broker.
``mock``   librdkafka's mock cluster (three brokers, in this process): leader churn
           (`bench.mock_upstream`).

A TCP proxy such as haproxy does not parse Kafka, so it cannot rewrite the addresses
brokers advertise: a client that bootstraps through it would be told the broker's own
address and go around it. Each upstream therefore has a second *side* for haproxy whose
brokers advertise haproxy's ports (a second Tansu broker, an extra Kafka listener, a
second mock cluster). Every other path sits in front of the main side and rewrites
addresses itself, or in paired rounds on Tansu in front of a broker of its own
(`Upstream.own_broker_paths`, bench.paired).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Protocol

from bench.grepplabs_peer import GrepplabsPeer
from bench.kroxylicious_peer import KroxyliciousPeer
from bench.peers import (
    REPO,
    AdvertisedTansu,
    HaproxyPeer,
    KproxyPeer,
    PythonFloorPeer,
    Unavailable,
)
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import LOOPBACK, free_ports
from tests.peers.tansu import TANSU_NODE_ID, TansuBroker, TansuProxy

#: Every path, in run order within a round.
ALL_PATHS = (
    "direct",
    "haproxy",
    "python-floor",
    "tansu-proxy",
    "kroxylicious",
    "grepplabs",
    "kproxy-uvloop",
    "kproxy-asyncio",
    "kproxy-compiled",
    "kproxy-base",
)
#: What `bench run` measures unless told otherwise (kproxy-base needs `bench ab --baseline`;
#: python-floor is a diagnosis, asked for by name).
DEFAULT_PATHS = tuple(p for p in ALL_PATHS if p not in ("python-floor", "kproxy-base"))

PATH_DESCRIPTIONS = {
    "direct": "client to broker, nothing in between",
    "haproxy": "haproxy, TCP mode (no parsing: the floor)",
    "python-floor": "bench.python_floor: Python on uvloop forwarding bytes, parsing nothing",
    "tansu-proxy": "`tansu proxy` (Kafka-aware proxy in Rust)",
    "kroxylicious": "Kroxylicious (Java), pass-through configuration",
    "grepplabs": "grepplabs kafka-proxy (Go)",
    "kproxy-uvloop": "kproxy on uvloop",
    "kproxy-asyncio": "kproxy on the standard asyncio loop",
    "kproxy-compiled": "kproxy on uvloop, its hot path built with mypyc (the container image)",
    "kproxy-base": "kproxy at the baseline revision (bench ab --baseline), on uvloop "
    "unless bench ab --standard-loop",
}

MAIN = "main"
HAPROXY_SIDE = "haproxy"
FLOOR_SIDE = "python-floor"
#: The paths that forward without parsing: each needs a side whose brokers advertise it.
FORWARDING_PATHS = (HAPROXY_SIDE, FLOOR_SIDE)


def side_of(path: str) -> str:
    return path if path in FORWARDING_PATHS else MAIN


class ProxyProcess(Protocol):
    """What the harness needs of a proxy in the path."""

    @property
    def bootstrap(self) -> str: ...

    @property
    def pid(self) -> int | None: ...

    def stop(self) -> None: ...


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def prefill(
    bootstrap: str,
    topic: str,
    count: int,
    size: int,
    timeout: float = 600,
    client_config: dict[str, Any] | None = None,
) -> None:
    """Write ``count`` messages of ``size`` bytes to ``topic`` (partition 0), not timed,
    by a producer with these further librdkafka settings."""
    argv = [sys.executable, "-m", "bench.workloads", "produce", "--bootstrap", bootstrap,
            "--topic", topic, "--size", str(size), "--count", str(count), "--partition", "0",
            "--warmup", "0", "--client-config", json.dumps(client_config or {})]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=_env(),
                          cwd=REPO, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"prefill of {topic} failed: {proc.stderr.strip()[-400:]}")


def _admin_create(bootstrap: str, topic: str, partitions: int, timeout: float = 30) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=timeout)
    futures[topic].result(timeout=timeout)


class TansuProxyPeer(TansuProxy):
    """``tansu proxy`` with the pid the harness reads /proc with."""

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None


class Upstream:
    """Base: one cluster (two sides), the addresses paths use, topics."""

    name = ""
    #: Node ids clients will see (Kroxylicious needs them up front).
    node_ids: list[int] = []

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.haproxy: HaproxyPeer | None = None
        self.haproxy_error: str | None = None
        #: Whether to start the python-floor side (set by the harness before start()).
        self.want_floor = False
        self.floor: PythonFloorPeer | None = None
        self.floor_error: str | None = f"no python-floor side on {type(self).__name__}"
        #: A checkout of the baseline revision, for the kproxy-base path.
        self.baseline_source: Path | None = None
        #: The loop the kproxy-base path runs on ("uvloop" or "asyncio").
        self.baseline_loop = "uvloop"
        #: The Python interpreter the kproxy-base path runs on.
        self.baseline_python = sys.executable
        #: This checkout's mypyc build (bench.ab.compiled_copy), for kproxy-compiled.
        self.compiled_source: Path | None = None
        #: Proxy paths given a broker of their own (set before start(); Tansu only):
        #: bench.paired, where every path's broker must fill as fast as every other's.
        self.own_broker_paths: tuple[str, ...] = ()

    def side(self, path: str) -> str:
        """The side ``path`` reaches: its own when a forwarder's, else the main side."""
        return side_of(path)

    # -- addresses ---------------------------------------------------------------------
    def direct_bootstrap(self) -> str:
        """Where the direct path's clients bootstrap (the main side)."""
        raise NotImplementedError

    def proxy_target(self) -> str:
        """What a proxy in front of the main side dials (comma-separated brokers)."""
        return self.direct_bootstrap()

    def proxy_target_of(self, path: str) -> str:
        """What the proxy of ``path`` dials: the main side's brokers."""
        return self.proxy_target()

    def fill_bootstrap(self, side: str) -> str:
        """Where an untimed writer reaches ``side``."""
        if side in FORWARDING_PATHS:
            return self.forwarder(side).bootstrap
        return self.direct_bootstrap()

    def forwarder(self, path: str) -> HaproxyPeer | PythonFloorPeer:
        """The running forwarder of ``path`` (haproxy or python-floor), or Unavailable."""
        peer = self.haproxy if path == HAPROXY_SIDE else self.floor
        if peer is None:
            error = self.haproxy_error if path == HAPROXY_SIDE else self.floor_error
            raise Unavailable(error or f"{path} is not running")
        return peer

    def sides(self) -> list[str]:
        return (
            [MAIN]
            + ([HAPROXY_SIDE] if self.haproxy is not None else [])
            + ([FLOOR_SIDE] if self.floor is not None else [])
        )

    def _start_floor(self, backend: str, port: int) -> None:
        try:
            self.floor = PythonFloorPeer(
                f"python-floor-{self.name}", backend, self.workdir, port=port
            ).start()
        except (RuntimeError, TimeoutError, OSError) as exc:
            self.floor_error = f"python-floor did not start: {exc}"

    def stop_forwarders(self) -> None:
        for peer in (self.haproxy, self.floor):
            if peer is not None:
                with contextlib.suppress(Exception):  # the next one is stopped all the same
                    peer.stop()

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        """Between rounds: give the next round the same starting state."""

    def stop(self) -> None:
        raise NotImplementedError

    # -- topics ------------------------------------------------------------------------
    def create_topic(self, topic: str, partitions: int, side: str) -> None:
        raise NotImplementedError

    def drop_topics(self, topics: list[str]) -> None:
        """Free what a round wrote (where restarting the broker is not the way)."""

    # -- proxies -----------------------------------------------------------------------
    def start_proxy(self, path: str) -> ProxyProcess:
        """Start the proxy of ``path`` in front of its side (not direct/haproxy)."""
        wd = self.workdir / path
        target = self.proxy_target_of(path)
        if path == "tansu-proxy":
            if len(self.node_ids) > 1:
                raise Unavailable(
                    "tansu proxy forwards every request to one origin broker, so it cannot "
                    "front a multi-broker cluster"
                )
            return TansuProxyPeer(target, workdir=wd, stop_grace=2.0).start()
        if path in ("kproxy-uvloop", "kproxy-asyncio", "kproxy-compiled", "kproxy-base"):
            servers = target.split(",")
            if path == "kproxy-base":
                if self.baseline_source is None:
                    raise Unavailable("no baseline revision (python -m bench ab --baseline REV)")
                return KproxyPeer(
                    path,
                    self.baseline_loop,
                    servers,
                    wd,
                    source=self.baseline_source,
                    python=self.baseline_python,
                ).start()
            if path == "kproxy-compiled":
                if self.compiled_source is None:
                    raise Unavailable("the mypyc build was not made (a C compiler and mypy)")
                return KproxyPeer(path, "uvloop", servers, wd, source=self.compiled_source).start()
            return KproxyPeer(path, path.split("-", 1)[1], servers, wd).start()
        if path == "kroxylicious":
            return KroxyliciousPeer(path, target, self.node_ids, wd).start()
        if path == "grepplabs":
            return GrepplabsPeer(path, target, wd).start()
        raise ValueError(f"no proxy for path {path!r}")


# ---------------------------------------------------------------------------------------
# Tansu
# ---------------------------------------------------------------------------------------


class TansuUpstream(Upstream):
    """Tansu brokers: ``main`` advertises itself, the haproxy side advertises haproxy's
    port (and with ``want_floor`` a third advertises python-floor's), and each of
    ``own_broker_paths`` has one of its own. :meth:`reset` restarts them on the same
    ports (in-memory storage: this frees what the previous round wrote)."""

    name = "tansu"
    node_ids = [TANSU_NODE_ID]

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.main_port, self.hap_broker_port, self.hap_port = free_ports(3)
        self.floor_broker_port, self.floor_port = free_ports(2)
        self.main: TansuBroker | None = None
        self.hap_broker: AdvertisedTansu | None = None
        self.floor_broker: AdvertisedTansu | None = None
        #: A port, then a broker, for each of ``own_broker_paths`` (given at start()).
        self.path_ports: dict[str, int] = {}
        self.path_brokers: dict[str, TansuBroker] = {}

    def side(self, path: str) -> str:
        return path if path in self.path_ports else super().side(path)

    def sides(self) -> list[str]:
        return super().sides() + list(self.path_brokers)

    def proxy_target_of(self, path: str) -> str:
        port = self.path_ports.get(path)
        return f"{LOOPBACK}:{port}" if port is not None else super().proxy_target_of(path)

    def fill_bootstrap(self, side: str) -> str:
        if side in self.path_ports:
            return self.proxy_target_of(side)
        return super().fill_bootstrap(side)

    def direct_bootstrap(self) -> str:
        return f"{LOOPBACK}:{self.main_port}"

    def _brokers(self) -> list[TansuBroker]:
        found = [b for b in (self.main, self.hap_broker, self.floor_broker) if b is not None]
        return found + list(self.path_brokers.values())

    def _start_brokers(self, with_haproxy_side: bool, with_floor_side: bool) -> None:
        self.main = TansuBroker(self.main_port, workdir=self.workdir / "tansu-main").start()
        if with_haproxy_side:
            self.hap_broker = AdvertisedTansu(
                self.hap_port, port=self.hap_broker_port, workdir=self.workdir / "tansu-hap"
            ).start()
        if with_floor_side:
            self.floor_broker = AdvertisedTansu(
                self.floor_port, port=self.floor_broker_port, workdir=self.workdir / "tansu-floor"
            ).start()
        self.path_brokers = {
            path: TansuBroker(port, workdir=self.workdir / f"tansu-{path}").start()
            for path, port in self.path_ports.items()
        }

    def start(self) -> None:
        self.path_ports = dict(
            zip(self.own_broker_paths, free_ports(len(self.own_broker_paths)), strict=True)
        )
        self._start_brokers(True, self.want_floor)
        assert self.hap_broker is not None
        try:
            self.haproxy = HaproxyPeer(
                "haproxy-tansu", self.hap_broker.bootstrap, self.workdir, port=self.hap_port
            ).start()
        except (Unavailable, RuntimeError, TimeoutError) as exc:
            self.haproxy_error = str(exc)
            self.hap_broker.stop()
            self.hap_broker = None
        if self.floor_broker is not None:
            self._start_floor(self.floor_broker.bootstrap, self.floor_port)
            if self.floor is None:
                self.floor_broker.stop()
                self.floor_broker = None

    def reset(self) -> None:
        for broker in self._brokers():
            broker.stop(timeout=2.0)
        self._start_brokers(self.haproxy is not None, self.floor is not None)

    def stop(self) -> None:
        self.stop_forwarders()
        for broker in self._brokers():
            broker.stop(timeout=2.0)

    def create_topic(self, topic: str, partitions: int, side: str) -> None:
        port = {
            HAPROXY_SIDE: self.hap_broker_port,
            FLOOR_SIDE: self.floor_broker_port,
            **self.path_ports,
        }.get(side, self.main_port)
        _admin_create(f"{LOOPBACK}:{port}", topic, partitions)


# ---------------------------------------------------------------------------------------
# Apache Kafka
# ---------------------------------------------------------------------------------------


class KafkaUpstream(Upstream):
    """One Apache Kafka node (KRaft, combined mode). Clients and proxies use its INTERNAL
    listener (advertised as ``127.0.0.1:port``); an extra ``HAPROXY`` listener is
    advertised as haproxy's port, and haproxy forwards to it (``FLOOR`` the same for
    python-floor, started with ``want_floor``)."""

    name = "kafka"
    node_ids = [1]

    def __init__(self, workdir: Path, heap: str = "512m") -> None:
        super().__init__(workdir)
        self.cluster = KafkaCluster(
            1, heap=heap, workdir=workdir / "kafka", keep_workdir=False, log_level="warn"
        )
        node = self.cluster.nodes[1]
        self.hap_listener_port, self.hap_port = free_ports(2)
        self.floor_listener_port, self.floor_port = free_ports(2)
        listeners = (
            f"CONTROLLER://{LOOPBACK}:{node.controller_port},"
            f"INTERNAL://{LOOPBACK}:{node.internal_port},"
            f"EXTERNAL://{LOOPBACK}:{node.external_port},"
            f"HAPROXY://{LOOPBACK}:{self.hap_listener_port},"
            f"FLOOR://{LOOPBACK}:{self.floor_listener_port}"
        )
        advertised = (
            f"INTERNAL://{LOOPBACK}:{node.internal_port},"
            f"EXTERNAL://{node.external_advertised},"
            f"HAPROXY://{LOOPBACK}:{self.hap_port},"
            f"FLOOR://{LOOPBACK}:{self.floor_port}"
        )
        self.cluster.broker_config.update(
            {
                "listeners": listeners,
                "advertised.listeners": advertised,
                "listener.security.protocol.map": (
                    "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,"
                    "HAPROXY:PLAINTEXT,FLOOR:PLAINTEXT"
                ),
                # Runs write hundreds of MB each; the harness deletes topics per round.
                "log.retention.check.interval.ms": "10000",
                "file.delete.delay.ms": "1000",
            }
        )

    def direct_bootstrap(self) -> str:
        return self.cluster.internal_bootstrap

    def start(self) -> None:
        self.cluster.start()
        try:
            self.haproxy = HaproxyPeer(
                "haproxy-kafka",
                f"{LOOPBACK}:{self.hap_listener_port}",
                self.workdir,
                port=self.hap_port,
            ).start()
        except (Unavailable, RuntimeError, TimeoutError) as exc:
            self.haproxy_error = str(exc)
        if self.want_floor:
            self._start_floor(f"{LOOPBACK}:{self.floor_listener_port}", self.floor_port)

    def stop(self) -> None:
        self.stop_forwarders()
        self.cluster.close()

    def create_topic(self, topic: str, partitions: int, side: str) -> None:
        # One broker serves both sides: a topic of either side is created on it.
        self.cluster.create_topic(topic, partitions=partitions, rf=1)

    def drop_topics(self, topics: list[str]) -> None:
        if not topics:
            return
        admin = self.cluster.admin()
        futures = admin.delete_topics(topics, request_timeout=30)
        for fut in futures.values():
            with contextlib.suppress(Exception):
                fut.result(timeout=30)
