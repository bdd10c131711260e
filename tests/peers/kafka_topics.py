"""What kproxy's tests ask of a real Kafka cluster's topics: create them, read the
metadata every running node agrees on, move leadership (KIP-853 quorums aside: see
``tests/peers/kraft_quorum.py``)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.peers.kafka_install import (
    MAIN_METADATA_QUORUM,
    MAIN_REASSIGN,
    ensure_kafka_jars,
    run_java_tool,
    tools_lib,
)
from tests.peers.net import (
    LOOPBACK,
    Metadata,
    PartitionMeta,
    TopicMeta,
    fetch_metadata,
    metadata_brokers,
    wait_until,
)

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

    from tests.peers.kafka_node import KafkaNode


class MetadataNotConverged(RuntimeError):
    """Running nodes do not (yet) report the same metadata."""


# What a poll of the cluster's metadata may hit while it is changing.
TRANSIENT_METADATA_ERRORS: tuple[type[BaseException], ...] = (
    MetadataNotConverged,
    OSError,
    KeyError,
)


class KafkaTopics:
    """Topics, partitions and leadership of a :class:`~tests.peers.kafka_cluster.KafkaCluster`
    (its base class): admin calls on its INTERNAL listeners, metadata every running node
    agrees on, preferred-leader elections and reassignments."""

    if TYPE_CHECKING:
        nodes: dict[int, KafkaNode]
        workdir: Path
        version: str
        lib: Path | None
        _admin: AdminClient | None

        @property
        def internal_bootstrap(self) -> str: ...
        @property
        def controller_bootstrap(self) -> str: ...
        def running_ids(self) -> list[int]: ...
        def node(self, node_id: int) -> KafkaNode: ...

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
            ignore=TRANSIENT_METADATA_ERRORS,
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
            get,
            timeout,
            interval=0.05,
            what=f"converged metadata of {topic}",
            ignore=TRANSIENT_METADATA_ERRORS,
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
            ignore=(*TRANSIENT_METADATA_ERRORS, TimeoutError),
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
            settled,
            timeout,
            interval=0.1,
            what=f"preferred leaders of {topic}",
            ignore=TRANSIENT_METADATA_ERRORS,
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
            ignore=TRANSIENT_METADATA_ERRORS,
        )

    def java_tool(
        self, main_class: str, *args: str, **options: Any
    ) -> subprocess.CompletedProcess[str]:
        """:func:`run_java_tool` (same options): one of Kafka's command-line tools, from
        :func:`tools_lib` of this cluster's Kafka version."""
        return run_java_tool(main_class, *args, lib=tools_lib(self.version), **options)

    def java_client(
        self, program: str, *args: str, **options: Any
    ) -> subprocess.CompletedProcess[str]:
        """:func:`run_java_tool` (same options): a Java program (a single source file)
        on this cluster's own Kafka release, its Java client included."""
        lib = self.lib or ensure_kafka_jars(self.version)
        return run_java_tool(program, *args, lib=lib, **options)

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
