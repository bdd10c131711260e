"""One node of a :class:`~tests.peers.kafka_cluster.KafkaCluster`: its ports and
directory, the ``server.properties`` it runs with, and its storage formatted for a
KIP-853 dynamic quorum."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from tests.peers.kafka_install import (
    MAIN_STORAGE_TOOL,
    TOOL_JVM_FLAGS,
    java_bin,
    java_env,
    slf4j_flags,
)
from tests.peers.net import LOOPBACK
from tests.peers.procs import PeerProcess


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


def node_properties(
    node: KafkaNode,
    nodes: Mapping[int, KafkaNode],
    *,
    auto_create_topics: bool,
    broker_config: Mapping[str, str],
) -> dict[str, str]:
    """The ``server.properties`` of ``node``, one of ``nodes``: the settings the module
    docstring of :mod:`tests.peers.kafka_cluster` lists, then ``broker_config``."""
    n = len(nodes)
    rf = min(3, n)
    props: dict[str, str] = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.bootstrap.servers": ",".join(
            f"{LOOPBACK}:{other.controller_port}" for other in nodes.values()
        ),
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
        "auto.create.topics.enable": str(auto_create_topics).lower(),
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
    props.update(broker_config)
    return props


def write_node_config(node: KafkaNode, properties: Mapping[str, str]) -> None:
    node.dir.mkdir(parents=True, exist_ok=True)
    lines = [f"{k}={v}" for k, v in properties.items()]
    node.config_path.write_text("\n".join(lines) + "\n")


def initial_controllers(nodes: Mapping[int, KafkaNode]) -> str:
    """``--initial-controllers`` of a KIP-853 dynamic quorum: every node a voter."""
    return ",".join(
        f"{n.node_id}@{LOOPBACK}:{n.controller_port}:{n.directory_id}" for n in nodes.values()
    )


def format_storage(nodes: Mapping[int, KafkaNode], lib: Path, cluster_id: str) -> None:
    """Format every node's storage (its ``server.properties`` written first) with Kafka's
    StorageTool, all nodes at once; a failure raises with each failed node's output."""
    procs: list[tuple[KafkaNode, subprocess.Popen[bytes], IO[bytes]]] = []
    try:
        for node in nodes.values():
            log = open(node.dir / "format.log", "wb")  # noqa: SIM115 - closed below
            argv = [
                java_bin(), "-Xmx256m", *TOOL_JVM_FLAGS, *slf4j_flags("warn"),
                "-cp", f"{lib}/*", MAIN_STORAGE_TOOL, "format",
                "--config", str(node.config_path),
                "--cluster-id", cluster_id,
                "--initial-controllers", initial_controllers(nodes),
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


def prop_value(value: str | int | bool) -> str:
    """A Python value as a Java properties file writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
