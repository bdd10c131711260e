"""A real Apache Kafka 4.x KRaft cluster on loopback, for kproxy's integration tests.

Jars come from Maven Central into a cache directory (``tests/peers/kafka_install.py``);
``python -m tests.peers.kafka_cli fetch`` does only that (CI runs it from
``.ci/install-peers.sh``). Each node (``tests/peers/kafka_node.py``) is a JVM started as
``java -cp 'LIB/*' kafka.Kafka server.properties``; topics, metadata and leadership are
``tests/peers/kafka_topics.py``'s.

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

import atexit
import contextlib
import os
import shutil
import signal
import tempfile
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from tests.peers.kafka_install import (
    KAFKA_VERSION,
    ensure_kafka_jars,
    java_env,
    kafka_server_argv,
    kafka_uuid,
)
from tests.peers.kafka_node import (
    KafkaNode,
    format_storage,
    node_properties,
    prop_value,
    write_node_config,
)
from tests.peers.kafka_topics import TRANSIENT_METADATA_ERRORS, KafkaTopics
from tests.peers.net import (
    LOOPBACK,
    free_ports,
    metadata_brokers,
    wait_for_port,
    wait_until,
)
from tests.peers.procs import PeerProcess, stop_together

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

# ---------------------------------------------------------------------------------------
# Cluster
# ---------------------------------------------------------------------------------------


_LIVE: weakref.WeakSet[KafkaCluster] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for cluster in list(_LIVE):
        with contextlib.suppress(Exception):
            cluster.close()


class KafkaCluster(KafkaTopics):
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
        self.broker_config = {k: prop_value(v) for k, v in (broker_config or {}).items()}
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

    def _write_config(self, node: KafkaNode) -> None:
        properties = node_properties(
            node,
            self.nodes,
            auto_create_topics=self.auto_create_topics,
            broker_config=self.broker_config,
        )
        write_node_config(node, properties)

    def _format(self) -> None:
        assert self.lib is not None
        for node in self.nodes.values():
            self._write_config(node)
        format_storage(self.nodes, self.lib, self.cluster_id)
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
                ignore=TRANSIENT_METADATA_ERRORS,
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
                ignore=TRANSIENT_METADATA_ERRORS,
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
                ignore=TRANSIENT_METADATA_ERRORS,
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

    def __repr__(self) -> str:
        return (
            f"KafkaCluster(version={self.version}, nodes={len(self.nodes)}, "
            f"running={self.running_ids()}, internal={self.internal_bootstrap})"
        )
