"""MirrorMaker 2 from Apache Kafka's own jars, replicating topics and consumer group
offsets from one test cluster to another (the cluster switchover tests).

Its jars come from Maven Central through ``tests/peers/mirror/pom.xml`` into the peers
cache (:func:`ensure_mirror_jars`; CI fetches them with the brokers'). It runs in
dedicated mode (``org.apache.kafka.connect.mirror.MirrorMaker``, what
``bin/connect-mirror-maker.sh`` starts) with the identity replication policy, so that a
topic keeps its name on the target and a client switched over finds it there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from tests.peers.kafka_install import (
    KAFKA_VERSION,
    TOOL_JVM_FLAGS,
    cache_root,
    copy_maven_dependencies,
    file_lock,
    java_bin,
    java_env,
    slf4j_flags,
)
from tests.peers.procs import PeerProcess, log_tail

POM = Path(__file__).resolve().parent / "mirror" / "pom.xml"
MAIN_MIRROR_MAKER = "org.apache.kafka.connect.mirror.MirrorMaker"
_MARKER = ".complete"
# MirrorMaker's and Connect's own topics: one replica each on a one-node test cluster.
_INTERNAL_TOPICS = (
    "checkpoints.topic", "offset-syncs.topic", "offset.storage", "status.storage",
    "config.storage",
)  # fmt: skip


def _stamp(version: str) -> str:
    return f"mirror {version} pom {hashlib.sha256(POM.read_bytes()).hexdigest()[:16]}\n"


def ensure_mirror_jars(version: str = KAFKA_VERSION) -> Path:
    """The directory holding MirrorMaker 2's jars for Kafka ``version`` (fetched once)."""
    home = cache_root() / f"mirror-{version}"
    lib = home / "lib"
    marker = home / _MARKER

    def complete() -> bool:
        try:
            return marker.read_text() == _stamp(version)
        except OSError:
            return False

    if complete():
        return lib
    with file_lock(home / ".lock"):
        if not complete():
            marker.unlink(missing_ok=True)
            copy_maven_dependencies(
                POM, lib, {"kafka.version": version}, [f"connect-mirror-{version}.jar"]
            )
            marker.write_text(_stamp(version))
    return lib


def mirror_properties(source: str, target: str, topics: Sequence[str]) -> str:
    """MirrorMaker 2's configuration: `topics` and every group's offsets from the cluster
    at `source` to the one at `target` (bootstrap addresses), checked every second."""
    return "\n".join(
        [
            "clusters = source, target",
            f"source.bootstrap.servers = {source}",
            f"target.bootstrap.servers = {target}",
            "source->target.enabled = true",
            "target->source.enabled = false",
            f"source->target.topics = {'|'.join(topics)}",
            "source->target.groups = .*",
            # The same topic names on the target: clients switched over find theirs.
            "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
            "sync.group.offsets.enabled = true",
            # Committed records only: an aborted transaction's never reach the target (by
            # default MirrorMaker reads uncommitted ones too, and writes them as plain).
            "source.consumer.isolation.level = read_committed",
            "sync.group.offsets.interval.seconds = 1",
            "emit.checkpoints.interval.seconds = 1",
            "emit.heartbeats.enabled = false",
            "refresh.topics.interval.seconds = 1",
            "refresh.groups.interval.seconds = 1",
            "offset.lag.max = 0",  # an offset sync for every record: exact translation
            "tasks.max = 1",
            *(f"{name}.replication.factor = 1" for name in _INTERNAL_TOPICS),
            "replication.factor = 1",
            "",
        ]
    )


class MirrorMaker:
    """MirrorMaker 2 in dedicated mode, as a context manager (stopped on exit)."""

    def __init__(
        self, source: str, target: str, topics: Sequence[str], workdir: Path, heap: str = "256m"
    ) -> None:
        self.config = workdir / "mm2.properties"
        self.log_path = workdir / "mm2.log"
        self.source, self.target, self.topics, self.heap = source, target, topics, heap
        self.process: PeerProcess | None = None

    def start(self) -> Self:
        lib = ensure_mirror_jars()
        self.config.write_text(mirror_properties(self.source, self.target, self.topics))
        argv = [
            java_bin(), f"-Xmx{self.heap}", *TOOL_JVM_FLAGS, *slf4j_flags("warn"),
            "-cp", f"{lib}/*", MAIN_MIRROR_MAKER, str(self.config),
        ]  # fmt: skip
        self.process = PeerProcess("mirror-maker", argv, log_path=self.log_path, env=java_env())
        self.process.start()
        return self

    def log(self) -> str:
        return log_tail(self.log_path, 60)

    def close(self) -> None:
        if self.process is not None:
            self.process.stop(timeout=10)
            self.process = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
