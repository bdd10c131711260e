"""The processes a benchmark run puts in the path: haproxy, and what every peer shares
(kproxy and Kroxylicious have modules of their own: ``bench.kproxy_peer``,
``bench.kroxylicious_peer``; the Tansu broker comes from ``tests/peers``).

Peers are installed from registries by name and cached under
``~/.cache/kproxy-peers`` (``$KPROXY_PEERS_CACHE``); none of their code is in this
repository. A peer that cannot be installed raises :class:`Unavailable` with the
reason, and the harness records it instead of failing the whole run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.procfs import maps_mention
from tests.peers.kafka_install import java_bin
from tests.peers.net import (
    LOOPBACK,
    free_port,
    wait_for_port,
)
from tests.peers.procs import PeerProcess
from tests.peers.tansu import TansuBroker

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent


def env_with_path(source: Path = REPO) -> dict[str, str]:
    """This process's environment with ``source`` first on PYTHONPATH: for a child that
    runs ``python -m`` from this checkout (or, for a baseline, from another)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(source) + os.pathsep + env.get("PYTHONPATH", "")
    return env


class Unavailable(RuntimeError):
    """A peer that cannot run on this machine; ``str(exc)`` says why."""


# ---------------------------------------------------------------------------------------
# Tansu with an advertised address of our choosing (for haproxy's path)
# ---------------------------------------------------------------------------------------


class AdvertisedTansu(TansuBroker):
    """A Tansu broker that advertises ``127.0.0.1:advertised_port`` (a TCP proxy in front
    of it) instead of its own listener, so that clients keep going through the proxy."""

    def __init__(self, advertised_port: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.advertised_port = advertised_port

    def _argv(self) -> list[str]:
        argv = super()._argv()
        i = argv.index("--advertised-listener-url")
        argv[i + 1] = f"tcp://{LOOPBACK}:{self.advertised_port}"
        return argv


# ---------------------------------------------------------------------------------------
# What every peer shares
# ---------------------------------------------------------------------------------------


class LoopbackPeer:
    """A proxy process listening on one loopback port: what every path's peer shares."""

    name: str
    port: int
    process: PeerProcess | None
    stop_timeout = 10.0

    @property
    def bootstrap(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(timeout=self.stop_timeout)

    def require_loop(self, loop: str) -> None:
        """Stop the started process and raise unless it runs on ``loop`` ("uvloop" or
        "asyncio"): uvloop's library is mapped into it exactly when it runs on uvloop."""
        assert self.process is not None and self.process.pid is not None
        on_uvloop = maps_mention(self.process.pid, "uvloop")
        if on_uvloop != (loop == "uvloop"):
            self.process.stop(timeout=5)
            raise RuntimeError(f"{self.name}: wanted the {loop} loop, uvloop={on_uvloop}")


# ---------------------------------------------------------------------------------------
# haproxy (TCP mode: no parsing, the floor a proxy's cost is measured from)
# ---------------------------------------------------------------------------------------


def haproxy_version() -> str | None:
    exe = shutil.which("haproxy")
    if exe is None:
        return None
    out = subprocess.run([exe, "-v"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"version (\S+)", out)
    return m.group(1) if m else out.splitlines()[0] if out else None


@dataclass(frozen=True)
class HaproxyTls:
    """haproxy terminating clients' TLS (one PEM file: certificate, chain and key) and
    originating TLS to the broker, verified against `ca` and `server_name`."""

    certificate_and_key: Path
    ca: Path
    server_name: str


class ForwarderPeer(LoopbackPeer):
    """A proxy that forwards bytes without parsing them: ``port`` -> ``backend``, plus one
    listener per extra route (``(listen port, backend)``, for clusters whose brokers
    advertise the forwarder's ports)."""

    stop_timeout = 5.0

    def __init__(
        self,
        name: str,
        backend: str,
        workdir: Path,
        port: int | None = None,
        extra_routes: list[tuple[int, str]] | None = None,
    ) -> None:
        self.name = name
        self.backend = backend
        self.workdir = workdir
        self.port = port or free_port()
        self.routes = [(self.port, backend), *(extra_routes or [])]
        self.process: PeerProcess | None = None

    def _run(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        """Start ``argv`` and wait until every route's port listens."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process = PeerProcess(
            self.name, argv, log_path=self.workdir / f"{self.name}.log", env=env, cwd=REPO
        ).start()
        proc = self.process
        for port, _ in self.routes:
            wait_for_port(LOOPBACK, port, 15, alive=lambda: proc.running, what=self.name)


class HaproxyPeer(ForwarderPeer):
    """haproxy in TCP mode, one frontend per route."""

    def __init__(self, *args: Any, tls: HaproxyTls | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tls = tls

    def config(self) -> str:
        # haproxy needs two descriptors a connection: maxconn 20,000 would not fit this
        # machine's limit of 20,000 descriptors, and 8,000 covers 3,000 idle clients.
        text = (
            "global\n"
            "    maxconn 8000\n"
            "defaults\n"
            "    mode tcp\n"
            "    timeout connect 5s\n"
            "    timeout client 1h\n"
            "    timeout server 1h\n"
        )
        bind_tls = server_tls = ""
        if self.tls is not None:
            bind_tls = f" ssl crt {self.tls.certificate_and_key}"
            server_tls = (
                f" ssl verify required ca-file {self.tls.ca} verifyhost {self.tls.server_name}"
                f" sni str({self.tls.server_name})"
            )
        for i, (port, backend) in enumerate(self.routes):
            text += (
                f"frontend fe{i}\n    bind {LOOPBACK}:{port}{bind_tls}\n    default_backend be{i}\n"
                f"backend be{i}\n    server upstream{i} {backend}{server_tls}\n"
            )
        return text

    def start(self) -> HaproxyPeer:
        exe = shutil.which("haproxy")
        if exe is None:
            raise Unavailable("haproxy is not installed (apt-get install -y haproxy)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        cfg = self.workdir / f"{self.name}.cfg"
        cfg.write_text(self.config())
        self._run([exe, "-db", "-f", str(cfg)])
        return self


# ---------------------------------------------------------------------------------------
# A peer's own process
# ---------------------------------------------------------------------------------------


def start_listening(
    name: str, argv: list[str], workdir: Path, port: int, timeout: float, title: str
) -> PeerProcess:
    """Start a peer and wait until it listens on ``port``; :class:`Unavailable` if not."""
    proc = PeerProcess(name, argv, log_path=workdir / f"{name}.log").start()
    try:
        wait_for_port(LOOPBACK, port, timeout, alive=lambda: proc.running, what=name)
    except (TimeoutError, RuntimeError) as exc:
        failure = proc.describe_failure()
        proc.stop(timeout=5)
        raise Unavailable(f"{title} did not start: {exc}: {failure[-400:]}") from exc
    return proc


# ---------------------------------------------------------------------------------------
# Versions (for the results' machine section)
# ---------------------------------------------------------------------------------------


def _first_line(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = (proc.stdout or proc.stderr).strip()
    return out.splitlines()[0].strip() if out else None


def tansu_version() -> str | None:
    from tests.peers.tansu import tansu_bin

    try:
        exe = tansu_bin()
    except FileNotFoundError:
        return None
    line = _first_line([exe, "--version"])
    return line.split()[-1] if line else None


def java_version() -> str | None:
    try:
        line = _first_line([java_bin(), "-version"])
    except FileNotFoundError:
        return None
    m = re.search(r'"([^"]+)"', line or "")
    return m.group(1) if m else line
