"""Kroxylicious, a Java Kafka proxy from Maven Central, as a benchmark path."""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.peers import BENCH, LoopbackPeer, Unavailable, start_listening
from tests.peers.kafka_install import (
    MavenFetchFailed,
    cache_root,
    copy_maven_dependencies,
    file_lock,
    java_bin,
)
from tests.peers.net import (
    LOOPBACK,
)
from tests.peers.procs import PeerProcess

KROXYLICIOUS_POM = BENCH / "kroxylicious" / "pom.xml"
#: Our stand-in for Kroxylicious's command line (kroxylicious-app is not on this
#: machine's Maven Central; kroxylicious-runtime, which holds the proxy, is).
KROXYLICIOUS_LAUNCHER = BENCH / "kroxylicious" / "KroxyliciousLauncher.java"
#: io.kroxylicious:kroxylicious-runtime release to fetch (override:
#: KPROXY_BENCH_KROXYLICIOUS_VERSION); 0.12.0 is the newest Maven Central serves here.
KROXYLICIOUS_VERSION = os.environ.get("KPROXY_BENCH_KROXYLICIOUS_VERSION", "0.12.0")
KROXYLICIOUS_MAIN = "KroxyliciousLauncher"


def consecutive_free_ports(count: int, attempts: int = 200) -> int:
    """A port P such that P..P+count-1 are all free on loopback (for peers that put
    node N on bootstrap port + N)."""
    for _ in range(attempts):
        base = random.randint(20000, 40000)
        socks: list[socket.socket] = []
        try:
            for p in range(base, base + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind((LOOPBACK, p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {count} consecutive free ports found")


def _last_error(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in text.splitlines() if "ERROR" in ln or "error" in ln.lower()]
    line = lines[0] if lines else (text.strip().splitlines() or ["(no output)"])[-1]
    line = re.sub(r"\x1b\[[0-9;]*m", "", line)
    return line[:limit]


def _javac() -> str | None:
    """``javac`` of the JDK :func:`java_bin` runs (so the class files match it)."""
    try:
        sibling = Path(java_bin()).resolve().parent / "javac"
    except FileNotFoundError:
        return None
    return str(sibling) if sibling.is_file() else shutil.which("javac")


def _compile_kroxylicious_launcher(home: Path, lib: Path) -> Path:
    """``home/classes`` holding :data:`KROXYLICIOUS_LAUNCHER` compiled against ``lib``;
    recompiled only when the source changes. A javac failure is not cached (it is
    cheap to retry and is fixed by editing the source)."""
    classes = home / "classes"
    source = KROXYLICIOUS_LAUNCHER.read_bytes()
    stamp = hashlib.sha256(source).hexdigest()
    done = classes / ".source-sha256"
    if done.is_file() and done.read_text().strip() == stamp:
        return classes
    javac = _javac()
    if javac is None:
        raise Unavailable("javac (a JDK, not only a JRE) is not installed")
    tmp = home / f"classes.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    cmd = [javac, "-nowarn", "-d", str(tmp), "-cp", f"{lib}/*", str(KROXYLICIOUS_LAUNCHER)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Unavailable(f"javac did not compile {KROXYLICIOUS_LAUNCHER.name} in 300 s") from None
    if proc.returncode != 0 or not (tmp / f"{KROXYLICIOUS_MAIN}.class").is_file():
        shutil.rmtree(tmp, ignore_errors=True)
        raise Unavailable(
            f"javac could not compile {KROXYLICIOUS_LAUNCHER.name} against "
            f"kroxylicious-runtime {KROXYLICIOUS_VERSION}: "
            + _last_error(proc.stdout + "\n" + proc.stderr)
        )
    (tmp / done.name).write_text(stamp + "\n")
    shutil.rmtree(classes, ignore_errors=True)
    tmp.rename(classes)
    return classes


def ensure_kroxylicious(version: str = KROXYLICIOUS_VERSION) -> str:
    """The classpath that runs Kroxylicious: ``io.kroxylicious:kroxylicious-runtime:<version>``
    and its dependencies (``mvn dependency:copy-dependencies`` into ``lib/``) plus
    :data:`KROXYLICIOUS_LAUNCHER` compiled into ``classes/``, or :class:`Unavailable`."""
    home = cache_root() / f"kroxylicious-{version}"
    lib = home / "lib"
    runtime_jar = f"kroxylicious-runtime-{version}.jar"
    with file_lock(home / ".lock"):
        if not ((home / ".complete").is_file() and (lib / runtime_jar).is_file()):
            _fetch_kroxylicious(home, version, runtime_jar)
    classes = _compile_kroxylicious_launcher(home, lib)
    return f"{lib}/*{os.pathsep}{classes}"


def _fetch_kroxylicious(home: Path, version: str, runtime_jar: str) -> None:
    failed = home / "install-failed.txt"
    if failed.is_file():
        # One attempt per machine and version; delete the file to try again.
        raise Unavailable(failed.read_text().strip())
    try:
        copy_maven_dependencies(
            KROXYLICIOUS_POM, home / "lib", {"kroxylicious.version": version}, [runtime_jar],
            timeout=900, update=True,
        )  # fmt: skip
    except FileNotFoundError as exc:
        raise Unavailable(str(exc)) from None
    except subprocess.TimeoutExpired:
        raise Unavailable(f"Maven did not fetch Kroxylicious {version} within 900 s") from None
    except MavenFetchFailed as exc:
        reason = (
            f"io.kroxylicious:kroxylicious-runtime:{version} did not resolve from Maven "
            "Central: " + _last_error(exc.output)
        )
        failed.write_text(reason + "\n")
        raise Unavailable(reason) from None
    (home / ".complete").write_text(version + "\n")


@dataclass(frozen=True)
class KroxyliciousTls:
    """Kroxylicious terminating clients' TLS and trusting `ca` towards the cluster."""

    certificate: Path
    key: Path
    ca: Path


class KroxyliciousPeer(LoopbackPeer):
    """Kroxylicious pass-through (no filters), port-per-broker networking
    (``portIdentifiesNode``): bootstrap on P, node N on P + 1 + (N - first id)."""

    def __init__(
        self,
        name: str,
        upstream: str,
        node_ids: list[int],
        workdir: Path,
        tls: KroxyliciousTls | None = None,
    ) -> None:
        self.name = name
        self.tls = tls
        self.upstream = upstream
        self.node_ids = sorted(node_ids)
        self.workdir = workdir
        self.port = consecutive_free_ports(len(self.node_ids) + 1)
        self.process: PeerProcess | None = None

    def config(self) -> dict[str, Any]:
        target: dict[str, Any] = {"bootstrapServers": self.upstream}
        gateway_tls: dict[str, Any] = {}
        if self.tls is not None:
            target["tls"] = {"trust": {"storeFile": str(self.tls.ca), "storeType": "PEM"}}
            gateway_tls = {
                "tls": {
                    "key": {
                        "privateKeyFile": str(self.tls.key),
                        "certificateFile": str(self.tls.certificate),
                    }
                }
            }
        return {
            "virtualClusters": [
                {
                    "name": "bench",
                    "targetCluster": target,
                    "gateways": [
                        {
                            "name": "default",
                            "portIdentifiesNode": {
                                "bootstrapAddress": self.bootstrap,
                                "nodeIdRanges": [
                                    {"name": f"n{i}", "start": i, "end": i} for i in self.node_ids
                                ],
                            },
                            **gateway_tls,
                        }
                    ],
                    "logNetwork": False,
                    "logFrames": False,
                }
            ]
        }

    def start(self) -> KroxyliciousPeer:
        classpath = ensure_kroxylicious()
        self.workdir.mkdir(parents=True, exist_ok=True)
        cfg = self.workdir / f"{self.name}.yaml"
        cfg.write_text(yaml.safe_dump(self.config()))
        # No log4j2 configuration file: its default configuration (console) at INFO,
        # which is Kroxylicious's startup/shutdown and error logging.
        argv = [
            java_bin(), "-Xms512m", "-Xmx512m", "-Djava.awt.headless=true",
            "-Dorg.apache.logging.log4j.level=INFO",
            "-cp", classpath, KROXYLICIOUS_MAIN, "--config", str(cfg),
        ]  # fmt: skip
        self.process = start_listening(self.name, argv, self.workdir, self.port, 60, "Kroxylicious")
        return self
