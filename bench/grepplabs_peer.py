"""grepplabs kafka-proxy, a Go Kafka proxy built through the Go module proxy, as a
benchmark path."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from bench.peers import LoopbackPeer, Unavailable, start_listening
from tests.peers.kafka_install import cache_root
from tests.peers.net import (
    LOOPBACK,
    free_ports,
)
from tests.peers.procs import PeerProcess

GREPPLABS_MODULE = "github.com/grepplabs/kafka-proxy"
GREPPLABS_VERSION = os.environ.get("KPROXY_BENCH_GREPPLABS_VERSION", "latest")


def _grepplabs_bindir() -> Path:
    """Where ``go install`` puts the ``kafka-proxy`` binary (in the peers' cache)."""
    return cache_root() / "grepplabs-kafka-proxy" / "bin"


def _installed_grepplabs() -> Path | None:
    """The ``kafka-proxy`` binary on PATH or in the cache, if either has one."""
    found = shutil.which("kafka-proxy")
    if found:
        return Path(found)
    exe = _grepplabs_bindir() / "kafka-proxy"
    return exe if exe.is_file() else None


def ensure_grepplabs() -> Path:
    """The ``kafka-proxy`` binary: on PATH, in the cache, or built with ``go install``
    into the cache. :class:`Unavailable` with Go's own reason if it does not build."""
    installed = _installed_grepplabs()
    if installed is not None:
        return installed
    bindir = _grepplabs_bindir()
    exe = bindir / "kafka-proxy"
    failed = bindir.parent / "install-failed.txt"
    if failed.is_file():
        # One attempt per machine; delete the file to try again.
        raise Unavailable(failed.read_text().strip())
    go = shutil.which("go")
    if go is None:
        raise Unavailable("the Go toolchain is not installed")
    bindir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOBIN=str(bindir))
    cmd = [go, "install", f"{GREPPLABS_MODULE}@{GREPPLABS_VERSION}"]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=900, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        raise Unavailable("go install of grepplabs kafka-proxy took over 900 s") from None
    if proc.returncode != 0 or not exe.is_file():
        reason = (
            f"`go install {GREPPLABS_MODULE}@{GREPPLABS_VERSION}` failed: "
            + " ".join((proc.stderr or proc.stdout).split())[:400]
        )
        failed.write_text(reason + "\n")
        raise Unavailable(reason)
    return exe


class GrepplabsPeer(LoopbackPeer):
    """grepplabs kafka-proxy with one bootstrap mapping per broker (``upstream`` is a
    comma-separated list of the brokers' advertised addresses); the first is the
    bootstrap."""

    stop_timeout = 5.0

    def __init__(self, name: str, upstream: str, workdir: Path) -> None:
        self.name = name
        self.upstreams = [u.strip() for u in upstream.split(",") if u.strip()]
        self.workdir = workdir
        ports = free_ports(len(self.upstreams) + 1)
        self.port = ports[0]
        self.http_port = ports[-1]
        self.local_ports = ports[:-1]
        self.process: PeerProcess | None = None

    def start(self) -> GrepplabsPeer:
        exe = ensure_grepplabs()
        argv = [str(exe), "server"]
        for upstream, port in zip(self.upstreams, self.local_ports, strict=True):
            argv += ["--bootstrap-server-mapping", f"{upstream},{LOOPBACK}:{port}"]
        argv += [
            "--http-listen-address", f"{LOOPBACK}:{self.http_port}",
            "--log-level", "warning",
        ]  # fmt: skip
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process = start_listening(self.name, argv, self.workdir, self.port, 30, "kafka-proxy")
        return self


def grepplabs_version() -> str | None:
    """The module version ``go version -m`` finds in the installed binary, if any
    (looking never installs: a run that leaves grepplabs out must not build it)."""
    exe = _installed_grepplabs()
    if exe is None:
        return None
    go = shutil.which("go")
    if go is None:
        return None
    proc = subprocess.run([go, "version", "-m", str(exe)], capture_output=True, text=True,
                          timeout=30, check=False)  # fmt: skip
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "mod" and parts[1] == GREPPLABS_MODULE:
            return parts[2]
    return None
