"""A real Apache Kafka 4.x KRaft cluster on loopback, for kproxy's integration tests.

Jars come from Maven Central through ``tests/peers/kafka/pom.xml`` into a cache directory
(:func:`ensure_kafka_jars`); ``python -m tests.peers.kafka_cluster fetch`` does only that
(CI runs it from ``.ci/install-peers.sh``). No Kafka distribution tarball, no shell scripts:
every JVM is started as ``java -cp 'LIB/*' MAIN_CLASS ...``.

:class:`KafkaCluster` runs N combined nodes (``process.roles=broker,controller``, node ids
1..N) formatted as a KIP-853 dynamic quorum (``--initial-controllers``). Each node has three
listeners, all bound to 127.0.0.1 on OS-assigned ports:

``CONTROLLER``
    KRaft quorum traffic (``controller.quorum.bootstrap.servers``); also what
    ``MetadataQuorumCommand --bootstrap-controller`` talks to.
``INTERNAL``
    inter-broker replication (``inter.broker.listener.name=INTERNAL``), advertised as
    ``127.0.0.1:port``; the harness's own admin calls use it (:attr:`internal_bootstrap`).
``EXTERNAL``
    for clients, advertised as ``broker-N.kafka.invalid:port``: a name no client can
    resolve (RFC 2606), so only a proxy that rewrites addresses and dials through its
    ``dial_overrides`` (:attr:`KafkaCluster.dial_overrides`) can serve clients.

Settings chosen for fast, deterministic tests (override any with ``broker_config``):

* ``auto.create.topics.enable=false``: a Metadata request for an unknown topic (a proxy
  bug, a typo) must not silently create it. Create topics with :meth:`create_topic`, which
  also waits for every partition to have a leader.
* ``auto.leader.rebalance.enable=false``: leadership moves only when a test asks for it
  (:meth:`elect_preferred_leaders`, :meth:`reassign`, :meth:`stop_node`).
* ``offsets.topic.replication.factor=3`` (min(3, N)), 6 partitions;
  ``transaction.state.log.replication.factor=3`` with ``min.isr=2``, 6 partitions;
  ``group.initial.rebalance.delay.ms=0``; ``num.partitions=1``;
  ``default.replication.factor=min(3, N)``.
* heap ``-Xmx448m`` per node (3 nodes fit in ~1.5 GB).

Logs: ``<workdir>/node-N/server.log`` (slf4j-simple, INFO). The work directory is a fresh
temp dir removed on close unless ``keep_workdir=True`` or ``KPROXY_PEERS_KEEP=1``.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Self

from tests.peers.net import (
    LOOPBACK,
    Metadata,
    PartitionMeta,
    TopicMeta,
    fetch_metadata,
    free_ports,
    metadata_brokers,
    wait_for_port,
    wait_until,
)
from tests.peers.procs import PeerProcess, stop_together

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

__all__ = [
    "KAFKA_VERSION",
    "KafkaCluster",
    "KafkaNode",
    "MavenFetchFailed",
    "MetadataNotConverged",
    "cache_root",
    "copy_maven_dependencies",
    "ensure_kafka_jars",
    "file_lock",
    "java_bin",
    "java_env",
    "kafka_home",
    "kafka_server_argv",
    "kafka_uuid",
    "main",
    "run_java_tool",
]

#: Apache Kafka release used (newest 4.x with kafka_2.13, kafka-tools and kafka-clients all
#: on Maven Central when this was written: 4.4.0 had no kafka-tools artifact there).
KAFKA_VERSION = "4.3.1"

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"

MAIN_BROKER = "kafka.Kafka"
MAIN_STORAGE_TOOL = "kafka.tools.StorageTool"  # what bin/kafka-storage.sh runs in 4.x
MAIN_REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
MAIN_LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
MAIN_METADATA_QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
MAIN_PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
MAIN_CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"

_MARKER = ".complete"


class MetadataNotConverged(RuntimeError):
    """Running nodes do not (yet) report the same metadata."""


# What a poll of the cluster's metadata may hit while it is changing.
_TRANSIENT: tuple[type[BaseException], ...] = (MetadataNotConverged, OSError, KeyError)


# ---------------------------------------------------------------------------------------
# Jars
# ---------------------------------------------------------------------------------------


def cache_root() -> Path:
    """``$KPROXY_PEERS_CACHE`` or ``~/.cache/kproxy-peers``."""
    env = os.environ.get("KPROXY_PEERS_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "kproxy-peers"


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    """``<cache_root>/kafka-<version>``; the jars are in its ``lib/``."""
    return cache_root() / f"kafka-{version}"


def _stamp(version: str) -> str:
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:16]
    return f"kafka {version} pom {digest}\n"


def _required_jars(version: str) -> list[str]:
    return [
        f"kafka_2.13-{version}.jar",
        f"kafka-tools-{version}.jar",
        f"kafka-clients-{version}.jar",
        f"kafka-server-{version}.jar",
    ]


def _complete(home: Path, version: str) -> bool:
    marker = home / _MARKER
    lib = home / "lib"
    try:
        if marker.read_text() != _stamp(version):
            return False
    except OSError:
        return False
    return all((lib / jar).is_file() for jar in _required_jars(version))


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class MavenFetchFailed(RuntimeError):
    """``mvn dependency:copy-dependencies`` failed or left out a jar that was asked for."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(f"{message}\n{output[-3000:]}")
        self.output = output


def copy_maven_dependencies(
    pom: Path,
    lib: Path,
    properties: Mapping[str, str],
    required: Iterable[str],
    *,
    timeout: float | None = None,
    update: bool = False,
) -> None:
    """Put ``pom``'s dependencies (``-Dkey=value`` for ``properties``) in ``lib``.

    The jars go to a temp dir that is renamed into place only once every ``required`` jar
    is there, so a half-done download is never used. The caller holds a lock
    (:func:`file_lock`) if several processes may fetch at once. ``update`` makes Maven
    look again for releases it once failed to find (``-U``). Raises FileNotFoundError
    without Maven, :class:`MavenFetchFailed`, or ``subprocess.TimeoutExpired``.
    """
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FileNotFoundError("mvn (Apache Maven) is not installed")
    lib.parent.mkdir(parents=True, exist_ok=True)
    tmp = lib.parent / f"{lib.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    cmd = [
        mvn, "-q", "-B", *(["-U"] if update else []), "-f", str(pom),
        "dependency:copy-dependencies", f"-DoutputDirectory={tmp}",
        *(f"-D{key}={value}" for key, value in properties.items()),
    ]  # fmt: skip
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        missing = [jar for jar in required if not (tmp / jar).is_file()]
        if proc.returncode != 0 or missing:
            raise MavenFetchFailed(
                f"{' '.join(cmd)} exited {proc.returncode}"
                + (f"; missing {', '.join(missing)}" if missing else ""),
                f"{proc.stdout}\n{proc.stderr}",
            )
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(lib, ignore_errors=True)
    tmp.rename(lib)


def ensure_kafka_jars(version: str = KAFKA_VERSION, *, force: bool = False) -> Path:
    """Return the directory holding every jar of Kafka ``version`` (broker, tools, client).

    Runs ``mvn dependency:copy-dependencies`` on ``tests/peers/kafka/pom.xml`` only when the
    cache is not complete (marker file keyed by version and pom hash). Safe to call from
    several processes at once (file lock).
    """
    home = kafka_home(version)
    lib = home / "lib"
    if not force and _complete(home, version):
        return lib
    with file_lock(home / ".lock"):
        if not force and _complete(home, version):
            return lib
        (home / _MARKER).unlink(missing_ok=True)
        copy_maven_dependencies(POM, lib, {"kafka.version": version}, _required_jars(version))
        (home / _MARKER).write_text(_stamp(version))
    return lib


def java_bin() -> str:
    """``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise FileNotFoundError("java not found (Java 17+ is needed for Kafka 4.x)")
    return found


def kafka_uuid() -> str:
    """A random Kafka ``Uuid`` string (22 chars base64url); never starts with '-' (it would
    look like an option to the tools' argument parsers)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def java_env() -> dict[str, str]:
    # Plain `java` ignores KAFKA_* variables, but JAVA_TOOL_OPTIONS / _JAVA_OPTIONS would
    # still be picked up; drop them so the caller's environment cannot change the peers.
    return {k: v for k, v in os.environ.items() if k not in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS")}


def _slf4j_flags(level: str) -> list[str]:
    return [
        f"-Dorg.slf4j.simpleLogger.defaultLogLevel={level}",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
        "-Dlog4j2.statusLoggerLevel=OFF",
    ]


_TOOL_JVM = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


def run_java_tool(
    main_class: str,
    *args: str,
    lib: Path | None = None,
    timeout: float = 300.0,
    check: bool = True,
    heap: str = "256m",
    jvm_args: Sequence[str] = (),
    log_level: str = "warn",
) -> subprocess.CompletedProcess[str]:
    """Run a Kafka tool main class (``org.apache.kafka.tools.ProducerPerformance`` ...)
    on Kafka's classpath (``lib``, default :func:`ensure_kafka_jars`); output captured as
    text. ``check`` raises with the output on a non-zero exit."""
    lib = lib or ensure_kafka_jars()
    argv = [
        java_bin(), f"-Xmx{heap}", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
        *_slf4j_flags(log_level), *jvm_args, "-cp", f"{lib}/*", main_class, *args,
    ]  # fmt: skip
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, env=java_env(),
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"{main_class} {' '.join(args)} exited {proc.returncode}:\n"
            f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
        )
    return proc


# ---------------------------------------------------------------------------------------
# Cluster
# ---------------------------------------------------------------------------------------


@dataclass
class KafkaNode:
    """One combined broker+controller node."""

    node_id: int
    controller_port: int
    internal_port: int
    external_port: int
    external_host: str
    directory_id: str
    dir: Path
    process: PeerProcess | None = field(default=None, repr=False)

    @property
    def config_path(self) -> Path:
        return self.dir / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.dir / "server.log"

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    @property
    def external_advertised(self) -> str:
        return f"{self.external_host}:{self.external_port}"

    @property
    def internal_address(self) -> str:
        return f"{LOOPBACK}:{self.internal_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running


_LIVE: weakref.WeakSet[KafkaCluster] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for cluster in list(_LIVE):
        with contextlib.suppress(Exception):
            cluster.close()


class KafkaCluster:
    """N-node Kafka KRaft cluster (combined mode) on loopback; see the module docstring.

    ::

        with KafkaCluster(nodes=3) as kc:
            kc.create_topic("t", partitions=3, rf=3)
            proxy_config = {"dial_overrides": kc.dial_overrides,
                            "upstream": kc.external_bootstrap}
            kc.stop_node(2); kc.start_node(2)
    """

    def __init__(
        self,
        nodes: int = 3,
        *,
        version: str = KAFKA_VERSION,
        heap: str = "448m",
        external_domain: str = "kafka.invalid",
        auto_create_topics: bool = False,
        broker_config: Mapping[str, str | int | bool] | None = None,
        workdir: Path | None = None,
        keep_workdir: bool | None = None,
        log_level: str = "info",
        start_timeout: float = 90.0,
    ) -> None:
        if nodes < 1:
            raise ValueError("nodes must be >= 1")
        self.version = version
        self.heap = heap
        self.external_domain = external_domain
        self.auto_create_topics = auto_create_topics
        self.broker_config = {k: _prop(v) for k, v in (broker_config or {}).items()}
        self.log_level = log_level
        self.start_timeout = start_timeout
        self.cluster_id = kafka_uuid()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="kp-kafka-"))
        if keep_workdir is None:
            keep_workdir = os.environ.get("KPROXY_PEERS_KEEP", "") not in ("", "0")
        self.keep_workdir = keep_workdir
        self.lib: Path | None = None
        self._formatted = False
        self._closed = False
        self._admin: AdminClient | None = None
        ports = free_ports(3 * nodes)
        self.nodes: dict[int, KafkaNode] = {}
        for i in range(nodes):
            node_id = i + 1
            self.nodes[node_id] = KafkaNode(
                node_id=node_id,
                controller_port=ports[3 * i],
                internal_port=ports[3 * i + 1],
                external_port=ports[3 * i + 2],
                external_host=f"broker-{node_id}.{external_domain}",
                directory_id=kafka_uuid(),
                dir=self.workdir / f"node-{node_id}",
            )

    # -- addresses -----------------------------------------------------------------------

    @property
    def external_bootstrap(self) -> str:
        """``broker-1.kafka.invalid:P1,...``: advertised client addresses (unresolvable)."""
        return ",".join(n.external_advertised for n in self.nodes.values())

    @property
    def dial_overrides(self) -> dict[str, str]:
        """``{"broker-N.kafka.invalid:P": "127.0.0.1:P"}`` for kproxy's ``dial_overrides``."""
        return {n.external_advertised: f"{LOOPBACK}:{n.external_port}" for n in self.nodes.values()}

    @property
    def external_real_bootstrap(self) -> str:
        """``127.0.0.1:P1,...`` of the EXTERNAL listeners (what a proxy actually dials)."""
        return ",".join(f"{LOOPBACK}:{n.external_port}" for n in self.nodes.values())

    @property
    def internal_bootstrap(self) -> str:
        """``127.0.0.1:I1,...`` of the INTERNAL listeners (advertised as themselves)."""
        return ",".join(n.internal_address for n in self.nodes.values())

    @property
    def controller_bootstrap(self) -> str:
        """``127.0.0.1:C1,...`` of the CONTROLLER listeners."""
        return ",".join(f"{LOOPBACK}:{n.controller_port}" for n in self.nodes.values())

    def running_ids(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.running]

    def node(self, node_id: int) -> KafkaNode:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise KeyError(f"no node {node_id} (nodes: {sorted(self.nodes)})") from None

    # -- configuration -----------------------------------------------------------------

    def _node_properties(self, node: KafkaNode) -> dict[str, str]:
        n = len(self.nodes)
        rf = min(3, n)
        props: dict[str, str] = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.bootstrap.servers": self.controller_bootstrap,
            "controller.listener.names": "CONTROLLER",
            "listeners": (
                f"CONTROLLER://{LOOPBACK}:{node.controller_port},"
                f"INTERNAL://{LOOPBACK}:{node.internal_port},"
                f"EXTERNAL://{LOOPBACK}:{node.external_port}"
            ),
            "advertised.listeners": (
                f"INTERNAL://{LOOPBACK}:{node.internal_port},EXTERNAL://{node.external_advertised}"
            ),
            "listener.security.protocol.map": (
                "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"
            ),
            "inter.broker.listener.name": "INTERNAL",
            "log.dirs": str(node.data_dir),
            "num.partitions": "1",
            "default.replication.factor": str(rf),
            "min.insync.replicas": "1",
            "auto.create.topics.enable": str(self.auto_create_topics).lower(),
            "auto.leader.rebalance.enable": "false",
            "offsets.topic.replication.factor": str(rf),
            "offsets.topic.num.partitions": "6",
            "transaction.state.log.replication.factor": str(rf),
            "transaction.state.log.min.isr": str(min(2, rf)),
            "transaction.state.log.num.partitions": "6",
            "share.coordinator.state.topic.replication.factor": str(rf),
            "share.coordinator.state.topic.min.isr": str(min(2, rf)),
            "share.coordinator.state.topic.num.partitions": "6",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "4",
            "num.recovery.threads.per.data.dir": "1",
            "log.segment.bytes": str(64 * 1024 * 1024),
            "log.retention.check.interval.ms": "300000",
        }
        props.update(self.broker_config)
        return props

    def _write_config(self, node: KafkaNode) -> None:
        node.dir.mkdir(parents=True, exist_ok=True)
        lines = [f"{k}={v}" for k, v in self._node_properties(node).items()]
        node.config_path.write_text("\n".join(lines) + "\n")

    def _initial_controllers(self) -> str:
        return ",".join(
            f"{n.node_id}@{LOOPBACK}:{n.controller_port}:{n.directory_id}"
            for n in self.nodes.values()
        )

    def _format(self) -> None:
        assert self.lib is not None
        procs: list[tuple[KafkaNode, subprocess.Popen[bytes], IO[bytes]]] = []
        try:
            for node in self.nodes.values():
                self._write_config(node)
                log = open(node.dir / "format.log", "wb")  # noqa: SIM115 - closed below
                argv = [
                    java_bin(), "-Xmx256m", *_TOOL_JVM, *_slf4j_flags("warn"),
                    "-cp", f"{self.lib}/*", MAIN_STORAGE_TOOL, "format",
                    "--config", str(node.config_path),
                    "--cluster-id", self.cluster_id,
                    "--initial-controllers", self._initial_controllers(),
                ]  # fmt: skip
                procs.append(
                    (
                        node,
                        subprocess.Popen(
                            argv,
                            stdout=log,
                            stderr=subprocess.STDOUT,
                            env=java_env(),
                            stdin=subprocess.DEVNULL,
                        ),
                        log,
                    )
                )
            failures = []
            for node, popen, _log in procs:
                rc = popen.wait(timeout=120)
                if rc != 0:
                    text = (node.dir / "format.log").read_text(errors="replace")
                    failures.append(f"node {node.node_id} (exit {rc}):\n{text[-3000:]}")
            if failures:
                raise RuntimeError("formatting Kafka storage failed:\n" + "\n".join(failures))
        finally:
            for _node, popen, fh in procs:
                if popen.poll() is None:
                    popen.kill()
                    popen.wait()
                fh.close()
        self._formatted = True

    def _node_argv(self, node: KafkaNode) -> list[str]:
        assert self.lib is not None
        return kafka_server_argv(self.lib, node.config_path, self.heap, self.log_level)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> Self:
        """Fetch jars (if needed), format storage, start every node, :meth:`wait_ready`."""
        if self._closed:
            raise RuntimeError("cluster is closed")
        _LIVE.add(self)
        try:
            self.lib = ensure_kafka_jars(self.version)
            if not self._formatted:
                self._format()
            for node in self.nodes.values():
                if not node.running:
                    self._spawn(node)
            self.wait_ready(self.start_timeout)
        except BaseException:
            self.close()
            raise
        return self

    def _spawn(self, node: KafkaNode) -> None:
        node.process = PeerProcess(
            f"kafka-node-{node.node_id}",
            self._node_argv(node),
            log_path=node.log_path,
            env=java_env(),
            cwd=node.dir,
        ).start()

    def _failure_report(self, ids: Sequence[int] | None = None) -> str:
        parts = []
        for node_id in ids or list(self.nodes):
            node = self.nodes[node_id]
            if node.process is not None:
                parts.append(node.process.describe_failure())
        return "\n".join(parts)

    def wait_ready(self, timeout: float = 60.0, node_ids: Sequence[int] | None = None) -> None:
        """Wait until every running node (or ``node_ids``) listens on all three ports and
        is registered and unfenced: every running node lists all running nodes in Metadata."""
        deadline = time.monotonic() + timeout
        ids = list(node_ids) if node_ids is not None else self.running_ids()
        try:
            for node_id in ids:
                node = self.nodes[node_id]
                proc = node.process
                if proc is None:
                    raise RuntimeError(f"node {node_id} was never started")

                def alive(p: PeerProcess = proc) -> bool:
                    return p.running

                for port in (node.controller_port, node.internal_port, node.external_port):
                    wait_for_port(
                        LOOPBACK,
                        port,
                        max(0.1, deadline - time.monotonic()),
                        alive=alive,
                        what=f"kafka node {node_id} to listen on {LOOPBACK}:{port}",
                    )
            want = set(self.running_ids())

            def registered() -> bool:
                dead = [i for i in ids if not self.nodes[i].running]
                if dead:
                    raise RuntimeError(f"kafka node(s) {dead} exited during startup")
                return self._all_see(want)

            wait_until(
                registered,
                max(0.1, deadline - time.monotonic()),
                interval=0.1,
                what=f"brokers {sorted(want)} to be registered and unfenced",
                ignore=_TRANSIENT,
            )
        except (TimeoutError, RuntimeError) as exc:
            raise RuntimeError(f"{exc}\n{self._failure_report(ids)}") from exc

    def alive_brokers(self) -> dict[int, set[int]]:
        """``{running node: broker ids it lists in Metadata}`` (INTERNAL listener, raw
        Metadata v1). KRaft brokers list only registered, unfenced brokers."""
        return {
            node_id: set(metadata_brokers(LOOPBACK, self.nodes[node_id].internal_port, 5.0))
            for node_id in self.running_ids()
        }

    def _all_see(self, want: set[int], absent: Iterable[int] = ()) -> bool:
        gone = set(absent)
        views = self.alive_brokers()
        return bool(views) and all(want <= v and not (gone & v) for v in views.values())

    def stop_node(
        self, node_id: int, *, kill: bool = False, timeout: float = 30.0, wait: bool = True
    ) -> None:
        """Stop one node: SIGTERM (controlled shutdown, leaders move away first) or, with
        ``kill``, SIGKILL (the controller fences it after ``broker.session.timeout.ms``, 9 s).

        With ``wait`` (and other nodes still running), returns once no remaining node lists
        it in Metadata any more (it is fenced)."""
        node = self.node(node_id)
        if node.process is None:
            return
        node.process.stop(timeout=timeout, kill=kill)
        others = self.running_ids()
        if wait and others:
            wait_until(
                lambda: self._all_see(set(others), absent={node_id}),
                timeout,
                interval=0.2,
                what=f"node {node_id} to be fenced after stopping",
                ignore=_TRANSIENT,
            )

    def start_node(self, node_id: int, timeout: float = 60.0, *, in_sync: bool = True) -> None:
        """(Re)start a stopped node on the same ports and data and wait until it is ready
        and, with ``in_sync``, back in the ISR of every partition it replicates (so that a
        preferred-leader election to it can succeed right away)."""
        node = self.node(node_id)
        if node.running:
            return
        if self.lib is None or not self._formatted:
            raise RuntimeError("start() the cluster first")
        deadline = time.monotonic() + timeout
        self._spawn(node)
        self.wait_ready(timeout, node_ids=[node_id])
        if in_sync:
            wait_until(
                lambda: not self.out_of_sync(node_id),
                max(0.1, deadline - time.monotonic()),
                interval=0.2,
                what=f"node {node_id} to rejoin the ISR of its partitions",
                ignore=_TRANSIENT,
            )

    def out_of_sync(self, node_id: int | None = None) -> list[tuple[str, int]]:
        """Partitions (all topics, internal ones included) where ``node_id`` (or any
        replica) is a replica but not in the ISR, per a converged metadata view."""
        lagging = []
        for name, meta in self.converged_metadata(None).items():
            for pid, part in meta.partitions.items():
                missing = set(part.replicas) - set(part.isr)
                if (node_id in missing) if node_id is not None else missing:
                    lagging.append((name, pid))
        return sorted(lagging)

    def signal_node(self, node_id: int, sig: signal.Signals) -> None:
        """Send a signal to a node's JVM (e.g. SIGSTOP / SIGCONT to freeze it)."""
        proc = self.node(node_id).process
        if proc is None or proc.pid is None:
            raise RuntimeError(f"node {node_id} is not running")
        os.kill(proc.pid, sig)

    def close(self, grace: float = 3.0) -> None:
        """Stop every node (SIGTERM to all at once, SIGKILL after ``grace`` seconds: once
        the quorum is gone, the last nodes' controlled shutdown can only time out) and
        remove the work directory (unless kept)."""
        if self._closed:
            return
        self._closed = True
        stop_together([n.process for n in self.nodes.values() if n.process is not None], grace)
        _LIVE.discard(self)
        self._admin = None
        if self._own_workdir and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- admin -------------------------------------------------------------------------

    def admin(self, **config: Any) -> AdminClient:
        """A confluent-kafka ``AdminClient`` on :attr:`internal_bootstrap`.

        Without arguments, the cluster's shared client (created once). Keep a reference to
        the client until its futures are resolved: a collected client cancels them."""
        from confluent_kafka.admin import AdminClient

        if not config and self._admin is not None:
            return self._admin
        conf: dict[str, Any] = {
            "bootstrap.servers": self.internal_bootstrap,
            "socket.connection.setup.timeout.ms": 5000,
            "reconnect.backoff.max.ms": 1000,
            "log_level": 2,
        }
        conf.update(config)
        client = AdminClient(conf)
        if not config:
            self._admin = client
        return client

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        rf: int | None = None,
        *,
        config: Mapping[str, str] | None = None,
        replica_assignment: Sequence[Sequence[int]] | None = None,
        timeout: float = 30.0,
    ) -> None:
        """Create a topic (``rf`` defaults to min(3, nodes)) and wait until every partition
        has a leader with all replicas in sync."""
        from confluent_kafka.cimpl import NewTopic

        if replica_assignment is not None:
            topic = NewTopic(
                name,
                replica_assignment=[list(r) for r in replica_assignment],
                config=dict(config or {}),
            )
        else:
            topic = NewTopic(
                name,
                num_partitions=partitions,
                replication_factor=rf if rf is not None else min(3, len(self.nodes)),
                config=dict(config or {}),
            )
        futures = self.admin().create_topics([topic], request_timeout=timeout)
        futures[name].result(timeout=timeout)

        want = partitions if replica_assignment is None else len(replica_assignment)

        def ready() -> bool:
            meta = self.converged_metadata([name]).get(name)
            if meta is None or meta.error or len(meta.partitions) != want:
                return False
            return all(
                p.leader >= 0 and set(p.isr) == set(p.replicas) for p in meta.partitions.values()
            )

        wait_until(
            ready,
            timeout,
            interval=0.1,
            what=f"topic {name} partitions to have leaders",
            ignore=_TRANSIENT,
        )

    # -- metadata (raw Metadata v1 on every running node's INTERNAL listener) -------------

    def metadata_views(self, topics: list[str] | None = None) -> dict[int, Metadata]:
        """``{running node: its Metadata answer}`` for ``topics`` (None = all topics)."""
        return {
            node_id: fetch_metadata(LOOPBACK, self.nodes[node_id].internal_port, topics, 5.0)
            for node_id in self.running_ids()
        }

    def converged_metadata(self, topics: list[str] | None = None) -> dict[str, TopicMeta]:
        """Topic metadata that every running node agrees on, or
        :class:`MetadataNotConverged` (brokers apply metadata changes independently)."""
        views = self.metadata_views(topics)
        if not views:
            raise RuntimeError("no Kafka node is running")
        first_id, first = next(iter(views.items()))
        for node_id, view in views.items():
            if view.topics != first.topics:
                raise MetadataNotConverged(
                    f"node {first_id} and node {node_id} disagree on {topics or 'all topics'}"
                )
        return first.topics

    def partitions(self, topic: str, timeout: float = 15.0) -> dict[int, PartitionMeta]:
        """``{partition: PartitionMeta(error, leader, replicas, isr)}`` once every running
        node reports the same (waits up to ``timeout``)."""

        def get() -> dict[int, PartitionMeta]:
            meta = self.converged_metadata([topic])[topic]
            if meta.error:
                raise RuntimeError(f"metadata error {meta.error} for topic {topic}")
            return dict(sorted(meta.partitions.items()))

        return wait_until(
            get, timeout, interval=0.05, what=f"converged metadata of {topic}", ignore=_TRANSIENT
        )

    def leaders(self, topic: str) -> dict[int, int]:
        """``{partition: leader node id}`` (-1 if leaderless), agreed by all running nodes."""
        return {p: m.leader for p, m in self.partitions(topic).items()}

    def replicas(self, topic: str) -> dict[int, list[int]]:
        """``{partition: [replica ids]}``, preferred leader first."""
        return {p: list(m.replicas) for p, m in self.partitions(topic).items()}

    def isr(self, topic: str) -> dict[int, list[int]]:
        """``{partition: [in-sync replica ids]}``."""
        return {p: list(m.isr) for p, m in self.partitions(topic).items()}

    def wait_for_leader(
        self, topic: str, partition: int, leader: int, timeout: float = 30.0
    ) -> None:
        wait_until(
            lambda: self.partitions(topic)[partition].leader == leader,
            timeout,
            interval=0.1,
            what=f"{topic}-{partition} to be led by node {leader}",
            ignore=(*_TRANSIENT, TimeoutError),
        )

    def elect_preferred_leaders(
        self, topic: str, partitions: Sequence[int] | None = None, timeout: float = 30.0
    ) -> dict[int, int]:
        """Preferred-replica election (Admin API ElectLeaders) for the topic's partitions,
        then wait until each partition whose preferred replica is running is led by it.
        Returns the resulting :meth:`leaders`. ELECTION_NOT_NEEDED is not an error."""
        from confluent_kafka import ElectionType, KafkaError, TopicPartition

        parts = list(partitions) if partitions is not None else sorted(self.partitions(topic))
        admin = self.admin()
        deadline = time.monotonic() + timeout
        pending = [TopicPartition(topic, p) for p in parts]
        while True:
            result = admin.elect_leaders(ElectionType.PREFERRED, pending).result(
                timeout=max(1.0, deadline - time.monotonic())
            )
            retry, errors = [], []
            for tp, err in result.items():
                if err is None:
                    continue
                # confluent-kafka 2.16 hands back a KafkaError (documented: KafkaException).
                kerr = err.args[0] if isinstance(err, Exception) and err.args else err
                code = kerr.code() if hasattr(kerr, "code") else None
                if code == KafkaError.ELECTION_NOT_NEEDED:
                    continue
                if code == KafkaError.PREFERRED_LEADER_NOT_AVAILABLE:
                    retry.append(TopicPartition(tp.topic, tp.partition))
                errors.append(f"{tp.topic}-{tp.partition}: {err}")
            if not errors:
                break
            if len(retry) < len(errors) or time.monotonic() >= deadline:
                raise RuntimeError("preferred leader election failed: " + "; ".join(errors))
            pending = retry  # preferred replica not (yet) in the ISR: try again
            time.sleep(0.2)
        running = set(self.running_ids())

        def settled() -> bool:
            meta = self.converged_metadata([topic])[topic].partitions
            return all(
                meta[p].leader == meta[p].replicas[0]
                for p in parts
                if meta[p].replicas and meta[p].replicas[0] in running
            )

        wait_until(
            settled, timeout, interval=0.1, what=f"preferred leaders of {topic}", ignore=_TRANSIENT
        )
        return self.leaders(topic)

    def rotate_leaders(self, topic: str, moves: int) -> None:
        """Move a partition's leadership `moves` times, one partition after another: its
        replica list rotated by a reassignment, then the new preferred leader elected."""
        partitions = len(self.partitions(topic))
        for i in range(moves):
            part = i % partitions
            replicas = self.replicas(topic)[part]
            self.reassign(topic, part, [*replicas[1:], replicas[0]])
            self.elect_preferred_leaders(topic, [part])

    def reassign(
        self, topic: str, partition: int, replicas: Sequence[int], timeout: float = 60.0
    ) -> None:
        """Move ``topic-partition`` to ``replicas`` (first = preferred leader) with
        ``ReassignPartitionsCommand --execute`` and wait until the replica set is exactly
        ``replicas`` and all of them are in sync.

        Kafka keeps the current leader if it is still a replica; call
        :meth:`elect_preferred_leaders` afterwards to move leadership to ``replicas[0]``."""
        plan = {
            "version": 1,
            "partitions": [
                {"topic": topic, "partition": partition, "replicas": [int(r) for r in replicas]}
            ],
        }
        plan_file = self.workdir / f"reassign-{topic}-{partition}-{time.monotonic_ns()}.json"
        plan_file.write_text(json.dumps(plan))
        self.java_tool(
            MAIN_REASSIGN,
            "--bootstrap-server", self.internal_bootstrap,
            "--reassignment-json-file", str(plan_file),
            "--execute",
            timeout=timeout,
        )  # fmt: skip
        want = [int(r) for r in replicas]

        def done() -> bool:
            meta = self.converged_metadata([topic])[topic].partitions[partition]
            return list(meta.replicas) == want and set(meta.isr) == set(want)

        wait_until(
            done,
            timeout,
            interval=0.1,
            what=f"reassignment of {topic}-{partition} to {want}",
            ignore=_TRANSIENT,
        )

    def java_tool(
        self, main_class: str, *args: str, **options: Any
    ) -> subprocess.CompletedProcess[str]:
        """:func:`run_java_tool` (same options) on this cluster's Kafka version."""
        lib = self.lib or ensure_kafka_jars(self.version)
        return run_java_tool(main_class, *args, lib=lib, **options)

    def describe_quorum(self, *, replication: bool = False) -> str:
        """``kafka-metadata-quorum describe --status`` (or ``--replication``) output, a
        client of DescribeQuorum over the CONTROLLER listeners."""
        return self.java_tool(
            MAIN_METADATA_QUORUM,
            "--bootstrap-controller", self.controller_bootstrap,
            "describe", "--replication" if replication else "--status",
            timeout=60,
        ).stdout  # fmt: skip

    def external_metadata(self, node_id: int = 1) -> dict[int, tuple[str, int]]:
        """Brokers as advertised on the EXTERNAL listener of ``node_id`` (Metadata v1 over a
        raw socket): ``{id: ("broker-N.kafka.invalid", port)}``."""
        return metadata_brokers(LOOPBACK, self.node(node_id).external_port)

    def __repr__(self) -> str:
        return (
            f"KafkaCluster(version={self.version}, nodes={len(self.nodes)}, "
            f"running={self.running_ids()}, internal={self.internal_bootstrap})"
        )


def kafka_server_argv(lib: Path, config: Path, heap: str, log_level: str = "info") -> list[str]:
    """How a Kafka node (broker, controller or both) starts: its JVM and its properties."""
    return [
        java_bin(),
        f"-Xms{heap}",
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:InitiatingHeapOccupancyPercent=35",
        "-XX:+ExplicitGCInvokesConcurrent",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        *_slf4j_flags(log_level),
        "-cp",
        f"{lib}/*",
        MAIN_BROKER,
        str(config),
    ]


def _prop(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# ---------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.peers.kafka_cluster",
        description="Fetch Apache Kafka jars for kproxy's tests, or run a local cluster.",
    )
    parser.add_argument("--version", default=KAFKA_VERSION, help="Kafka version")
    sub = parser.add_subparsers(dest="cmd", required=True)
    fetch = sub.add_parser("fetch", help="download the jars into the cache (idempotent)")
    fetch.add_argument("--force", action="store_true", help="download again")
    sub.add_parser("lib", help="print the jar directory (fetching if needed)")
    up = sub.add_parser("up", help="run a cluster in the foreground until Ctrl-C")
    up.add_argument("--nodes", type=int, default=3)
    args = parser.parse_args(argv)

    if args.cmd in ("fetch", "lib"):
        started = time.monotonic()
        lib = ensure_kafka_jars(args.version, force=getattr(args, "force", False))
        if args.cmd == "fetch":
            jars = len(list(lib.glob("*.jar")))
            print(f"Kafka {args.version}: {jars} jars in {lib} ({time.monotonic() - started:.1f}s)")
        else:
            print(lib)
        return 0

    started = time.monotonic()
    with KafkaCluster(args.nodes, version=args.version, keep_workdir=True) as cluster:
        print(f"Kafka {args.version} cluster ready in {time.monotonic() - started:.1f}s")
        print(f"workdir:            {cluster.workdir}")
        print(f"internal bootstrap: {cluster.internal_bootstrap}")
        print(f"external bootstrap: {cluster.external_bootstrap}")
        print(f"controllers:        {cluster.controller_bootstrap}")
        print(f"dial_overrides:     {json.dumps(cluster.dial_overrides)}")
        sys.stdout.flush()
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
