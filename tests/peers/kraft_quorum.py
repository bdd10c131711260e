"""A real Apache Kafka 4.x cluster whose KRaft controller quorum runs through kproxy.

Dedicated controllers (``process.roles=controller``) and brokers (``process.roles=broker``)
on loopback, formatted as a KIP-853 dynamic quorum. Each controller listens on its own
port (``listeners=CONTROLLER://127.0.0.1:R``) but advertises kproxy's port for itself
(``advertised.listeners=CONTROLLER://127.0.0.1:K``); ``--initial-controllers`` and every
node's ``controller.quorum.bootstrap.servers`` name kproxy's ports only. The real
addresses are known to kproxy alone, as ``controller-N.quorum.invalid:R`` reached through
its ``dial_overrides`` (:meth:`QuorumCluster.kproxy_config`). So no controller or broker
can reach a controller except through kproxy.

Spare controllers are formatted with ``--no-initial-controllers``: started, they follow
the quorum as observers until ``kafka-metadata-quorum add-controller`` makes them voters.

Brokers are as in :mod:`tests.peers.kafka_cluster`: an ``INTERNAL`` listener for
replication and an ``EXTERNAL`` one advertised as ``broker-N.kafka.invalid:P`` for
clients, which only kproxy's client listeners can serve.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from tests.peers.kafka_install import (
    KAFKA_VERSION,
    MAIN_METADATA_QUORUM,
    MAIN_STORAGE_TOOL,
    ensure_kafka_jars,
    java_env,
    kafka_server_argv,
    kafka_uuid,
    run_java_tool,
    tools_lib,
)
from tests.peers.net import LOOPBACK, free_ports, metadata_brokers, wait_until
from tests.peers.procs import PeerProcess, stop_together

CONTROLLER_DOMAIN = "quorum.invalid"
BROKER_DOMAIN = "kafka.invalid"


@dataclass
class QuorumNode:
    node_id: int
    role: str  # "controller" or "broker"
    dir: Path
    directory_id: str
    ports: dict[str, int]  # controller: real, kproxy; broker: internal, external
    initial_voter: bool = False
    process: PeerProcess | None = field(default=None, repr=False)

    @property
    def config_path(self) -> Path:
        return self.dir / "server.properties"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running


class QuorumCluster:
    """Controllers and brokers whose controller traffic all goes through kproxy."""

    def __init__(
        self,
        controllers: Iterable[int] = (1, 2, 3),
        spare_controllers: Iterable[int] = (4,),
        brokers: Iterable[int] = (11, 12),
        *,
        controller_heap: str = "256m",
        broker_heap: str = "384m",
        version: str = KAFKA_VERSION,
    ) -> None:
        self.version = version
        self.workdir = Path(tempfile.mkdtemp(prefix="kp-quorum-"))
        self.cluster_id = kafka_uuid()
        self.controller_heap, self.broker_heap = controller_heap, broker_heap
        self.lib: Path | None = None
        self.nodes: dict[int, QuorumNode] = {}
        voters, spares, broker_ids = list(controllers), list(spare_controllers), list(brokers)
        ports = iter(free_ports(2 * (len(voters) + len(spares) + len(broker_ids))))
        for node_id in voters + spares:
            self.nodes[node_id] = QuorumNode(
                node_id,
                "controller",
                self.workdir / f"controller-{node_id}",
                kafka_uuid(),
                {"real": next(ports), "kproxy": next(ports)},
                initial_voter=node_id in voters,
            )
        for node_id in broker_ids:
            self.nodes[node_id] = QuorumNode(
                node_id,
                "broker",
                self.workdir / f"broker-{node_id}",
                kafka_uuid(),
                {"internal": next(ports), "external": next(ports)},
            )

    # -- addresses ---------------------------------------------------------------------------
    def controllers(self) -> list[QuorumNode]:
        return [n for n in self.nodes.values() if n.role == "controller"]

    def brokers(self) -> list[QuorumNode]:
        return [n for n in self.nodes.values() if n.role == "broker"]

    def kproxy_controller(self, node_id: int) -> str:
        return f"{LOOPBACK}:{self.nodes[node_id].ports['kproxy']}"

    @property
    def controller_bootstrap(self) -> str:
        """kproxy's ports of every controller, the spare's too: all any node or tool is
        told."""
        return ",".join(self.kproxy_controller(n.node_id) for n in self.controllers())

    def real_controller(self, node_id: int) -> str:
        return f"controller-{node_id}.{CONTROLLER_DOMAIN}:{self.nodes[node_id].ports['real']}"

    def broker_advertised(self, node_id: int) -> str:
        return f"broker-{node_id}.{BROKER_DOMAIN}:{self.nodes[node_id].ports['external']}"

    def kproxy_config(self) -> dict[str, Any]:
        """kproxy's `cluster` (the brokers, every real name's dial address) and `quorum`
        (a port per controller) sections."""
        overrides = {
            f"controller-{n.node_id}.{CONTROLLER_DOMAIN}": LOOPBACK for n in self.controllers()
        }
        for b in self.brokers():
            overrides[self.broker_advertised(b.node_id)] = f"{LOOPBACK}:{b.ports['external']}"
        return {
            "cluster": {
                "bootstrap_servers": [self.broker_advertised(b.node_id) for b in self.brokers()],
                "dial_overrides": overrides,
            },
            "quorum": {
                "controllers": {
                    str(n.node_id): {
                        "port": n.ports["kproxy"],
                        "address": self.real_controller(n.node_id),
                    }
                    for n in self.controllers()
                }
            },
        }

    # -- configuration -----------------------------------------------------------------------
    def _properties(self, node: QuorumNode) -> dict[str, str]:
        common = {
            "node.id": str(node.node_id),
            "controller.quorum.bootstrap.servers": self.controller_bootstrap,
            "controller.listener.names": "CONTROLLER",
            "log.dirs": str(node.dir / "data"),
            "num.network.threads": "2",
            "num.io.threads": "2",
        }
        if node.role == "controller":
            return {
                **common,
                "process.roles": "controller",
                "listeners": f"CONTROLLER://{LOOPBACK}:{node.ports['real']}",
                # The controller advertises kproxy's port for itself: the voter set in
                # the metadata log names kproxy, never this controller's own listener.
                "advertised.listeners": f"CONTROLLER://{self.kproxy_controller(node.node_id)}",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                "controller.quorum.auto.join.enable": "false",
            }
        rf = str(min(2, len(self.brokers())))
        return {
            **common,
            "process.roles": "broker",
            "listeners": (
                f"INTERNAL://{LOOPBACK}:{node.ports['internal']},"
                f"EXTERNAL://{LOOPBACK}:{node.ports['external']}"
            ),
            "advertised.listeners": (
                f"INTERNAL://{LOOPBACK}:{node.ports['internal']},"
                f"EXTERNAL://{self.broker_advertised(node.node_id)}"
            ),
            "listener.security.protocol.map": (
                "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"
            ),
            "inter.broker.listener.name": "INTERNAL",
            "auto.create.topics.enable": "false",
            "auto.leader.rebalance.enable": "false",
            "default.replication.factor": rf,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # A broker that has not registered within this gives up and exits. Kafka's 60 s
            # default was once too short for a broker starting beside three controllers
            # and a second broker on a loaded 2-core machine; the test's own wait for the
            # registration (`wait_brokers_registered`) is the bound that counts.
            "initial.broker.registration.timeout.ms": "180000",
        }

    def _format(self, node: QuorumNode) -> None:
        node.dir.mkdir(parents=True, exist_ok=True)
        props = self._properties(node)
        node.config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        args = ["format", "--config", str(node.config_path), "--cluster-id", self.cluster_id]
        if node.role == "controller" and node.initial_voter:
            voters = ",".join(
                f"{n.node_id}@{self.kproxy_controller(n.node_id)}:{n.directory_id}"
                for n in self.controllers()
                if n.initial_voter
            )
            args += ["--initial-controllers", voters]
        elif node.role == "controller":
            args.append("--no-initial-controllers")
        run_java_tool(MAIN_STORAGE_TOOL, *args, lib=self.lib, timeout=120)
        if node.role == "controller" and not node.initial_voter:
            # A spare controller's directory id is the one its format wrote.
            meta = (node.dir / "data" / "meta.properties").read_text()
            for line in meta.splitlines():
                if line.startswith("directory.id="):
                    node.directory_id = line.split("=", 1)[1]

    # -- lifecycle ---------------------------------------------------------------------------
    def format(self) -> Self:
        self.lib = ensure_kafka_jars(self.version)
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(self._format, self.nodes.values()))
        return self

    def start_node(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.running:
            return
        assert self.lib is not None, "format() first"
        heap = self.controller_heap if node.role == "controller" else self.broker_heap
        node.process = PeerProcess(
            f"kafka-{node.role}-{node_id}",
            kafka_server_argv(self.lib, node.config_path, heap),
            log_path=node.dir / "server.log",
            env=java_env(),
            cwd=node.dir,
        ).start()

    def stop_node(self, node_id: int, *, kill: bool = False, timeout: float = 30.0) -> None:
        node = self.nodes[node_id]
        if node.process is not None:
            node.process.stop(timeout=timeout, kill=kill)

    def wait_brokers_registered(self, timeout: float = 120.0) -> None:
        """Every running broker lists every running broker (registered, unfenced)."""
        want = {b.node_id for b in self.brokers() if b.running}

        def registered() -> bool:
            for b in self.brokers():
                if b.process is not None and not b.running:
                    raise RuntimeError(f"broker {b.node_id} exited:\n{_exit_story(b.process)}")
            views = [
                set(metadata_brokers(LOOPBACK, b.ports["internal"], 5.0))
                for b in self.brokers()
                if b.running
            ]
            return bool(views) and all(v == want for v in views)

        wait_until(
            registered,
            timeout,
            interval=0.2,
            what=f"brokers {sorted(want)} registered through kproxy",
            ignore=(OSError, KeyError),
        )

    def metadata_quorum(
        self, *args: str, server: str | None = None, asking: Sequence[int] = ()
    ) -> str:
        """``kafka-metadata-quorum --bootstrap-controller <kproxy's controller ports> ...``
        (or ``--bootstrap-server <server>``, through a broker): its output. ``asking``:
        only these controllers' ports. A controller just started answers the tool with
        "Direct-to-controller communication is not supported with the current
        MetadataVersion" until it has read the metadata log's feature level, and the tool
        takes that as fatal, wherever in its bootstrap list that controller stands."""
        if server is not None and asking:
            raise ValueError("ask through a broker (server) or controllers (asking), not both")
        if server is not None:
            where = ["--bootstrap-server", server]
        elif asking:
            where = ["--bootstrap-controller", ",".join(map(self.kproxy_controller, asking))]
        else:
            where = ["--bootstrap-controller", self.controller_bootstrap]
        return self.java_tool(MAIN_METADATA_QUORUM, *where, *args, timeout=90).stdout

    def java_tool(
        self, main_class: str, *args: str, **options: Any
    ) -> subprocess.CompletedProcess[str]:
        """:func:`run_java_tool` (same options): one of Kafka's command-line tools, from
        :func:`tools_lib` of this quorum's Kafka version (as `KafkaTopics.java_tool`)."""
        return run_java_tool(main_class, *args, lib=tools_lib(self.version), **options)

    def story(self, lines_per_node: int = 10) -> str:
        """What each started node said about the quorum and its registration, a few lines
        each, repeats folded: short enough that a CI log's tail still shows all of it."""
        parts = []
        for n in self.nodes.values():
            if n.process is not None:
                state = "running" if n.running else f"exit code {n.process.returncode}"
                told = quorum_story(n.process.log_path, lines_per_node)
                parts.append(f"-- {n.role} {n.node_id} ({state}):\n{told}")
        return "\n".join(parts)

    def close(self, grace: float = 5.0) -> None:
        stop_together([n.process for n in self.nodes.values() if n.process is not None], grace)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# Lines of a Kafka 4.x node's log that tell how it found the quorum: its raft state
# changes, the voter set it learned, the controller its channels use, its registration,
# lost connections, and every warning or error but a configuration notice.
QUORUM_EVENTS = re.compile(
    r"Completed transition to|Latest set of voters|Recorded new KRaft controller"
    r"|BrokerLifecycleManager|Node -?\d+ disconnected|could not be established| ERROR | WARN "
)
CONFIG_NOTICE = re.compile(r"WARN kafka\.server\.KafkaConfig ")
TIMESTAMP = re.compile(r"^\d\d:\d\d:\d\d\.\d+ ")
# A logger's package and a "[RaftManager id=N] " prefix say nothing the story's heading
# does not; without them a cut line keeps more of its message.
NOISE = re.compile(r"(?<= )(?:org\.apache\.)?kafka\.(?:\w+\.)*(?=\w+ - )|\[RaftManager id=\d+\] ")


def quorum_story(log_path: Path, limit: int = 10, width: int = 240) -> str:
    """The last ``limit`` quorum events of a node's log (:data:`QUORUM_EVENTS`), each cut
    to ``width`` characters; a run of lines that differ only in their time is its first
    line and the count."""
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    folded: list[tuple[str, str, int]] = []  # (first line, line without its time, count)
    for line in lines:
        if not QUORUM_EVENTS.search(line) or CONFIG_NOTICE.search(line):
            continue
        line = NOISE.sub("", line)
        bare = TIMESTAMP.sub("", line)
        if folded and folded[-1][1] == bare:
            first, _, count = folded[-1]
            folded[-1] = (first, bare, count + 1)
        else:
            folded.append((line, bare, 1))
    told = [first[:width] + (f"  [x{count}]" if count > 1 else "") for first, _, count in folded]
    return "\n".join(told[-limit:]) or "(no quorum event logged)"


def _exit_story(process: PeerProcess) -> str:
    """What a broker that exited said about reaching the controllers, then its last lines."""
    return f"{quorum_story(process.log_path, 60)}\n...\n{process.log_tail(20)}"
