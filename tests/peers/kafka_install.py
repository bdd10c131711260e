"""Apache Kafka for kproxy's tests, without a distribution tarball: its jars from Maven
Central (through ``tests/peers/kafka/pom.xml``) into a cache directory
(:func:`ensure_kafka_jars`), and its JVMs started as ``java -cp 'LIB/*' MAIN_CLASS ...``
(a node: :func:`kafka_server_argv`; a command-line tool: :func:`run_java_tool`).
``python -m tests.peers.kafka_cli fetch`` fetches the jars (CI runs it from
``.ci/install-peers.sh``)."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

#: Apache Kafka release used (newest 4.x with kafka_2.13, kafka-tools and kafka-clients all
#: on Maven Central when this was written: 4.4.0 had no kafka-tools artifact there).
KAFKA_VERSION = "4.3.1"

#: The other releases some real-Kafka tests run too (test_kraft_quorum.py; the Kafka 4
#: ones, test_share_groups.py and test_java_fetch_streaming.py): the last 3.x (the protocol
#: before KIP-896 removed old versions) and the newest broker.
OTHER_RELEASES = ("3.9.2", "4.4.0")

#: The releases of Kafka 4 among them: share groups (KIP-932) are 4.x's.
KAFKA_4_RELEASES = (KAFKA_VERSION, *(v for v in OTHER_RELEASES if not v.startswith("3.")))

#: Releases without a kafka-tools artifact on Maven Central, and the release whose tools
#: run against them, from that release's own classpath (the tools speak to a cluster only
#: over the wire; 4.3.1's tools on 4.4.0's jars miss a class 4.4's jars no longer hold).
_TOOLS_FROM = {"4.4.0": "4.3.1"}

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"

MAIN_BROKER = "kafka.Kafka"
MAIN_STORAGE_TOOL = "kafka.tools.StorageTool"  # what bin/kafka-storage.sh runs in 4.x
MAIN_REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
MAIN_LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
MAIN_METADATA_QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
MAIN_PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
MAIN_CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"

_MARKER = ".complete"


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


def tools_lib(version: str = KAFKA_VERSION) -> Path:
    """The jar directory Kafka ``version``'s command-line tools run from: its own, or
    that of the release its tools come from (``_TOOLS_FROM``)."""
    return ensure_kafka_jars(_TOOLS_FROM.get(version, version))


def _stamp(version: str) -> str:
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:16]
    return f"kafka {version} pom {digest}\n"


def _required_jars(version: str) -> list[str]:
    tools = [] if version in _TOOLS_FROM else [f"kafka-tools-{version}.jar"]
    return [
        f"kafka_2.13-{version}.jar",
        *tools,
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
    """Return the directory holding every jar of Kafka ``version`` (broker, client, and
    its tools where Maven Central has them: :func:`tools_lib`).

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
        properties = {"kafka.version": version}
        if version in _TOOLS_FROM:
            properties["kafka.without.tools"] = "true"
        copy_maven_dependencies(POM, lib, properties, _required_jars(version))
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


def slf4j_flags(level: str) -> list[str]:
    return [
        f"-Dorg.slf4j.simpleLogger.defaultLogLevel={level}",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
        "-Dlog4j2.statusLoggerLevel=OFF",
    ]


TOOL_JVM_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


def java_tool_argv(
    main_class: str,
    *args: str,
    lib: Path | None = None,
    heap: str = "256m",
    jvm_args: Sequence[str] = (),
    log_level: str = "warn",
) -> list[str]:
    """How a Kafka tool main class (or a single-file Java program) runs on Kafka's
    classpath (``lib``, default :func:`ensure_kafka_jars`)."""
    lib = lib or ensure_kafka_jars()
    return [
        java_bin(), f"-Xmx{heap}", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
        *slf4j_flags(log_level), *jvm_args, "-cp", f"{lib}/*", main_class, *args,
    ]  # fmt: skip


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
    argv = java_tool_argv(
        main_class, *args, lib=lib, heap=heap, jvm_args=jvm_args, log_level=log_level
    )
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
        *slf4j_flags(log_level),
        "-cp",
        f"{lib}/*",
        MAIN_BROKER,
        str(config),
    ]
