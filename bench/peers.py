"""The processes a benchmark run puts in the path: kproxy, haproxy, Kroxylicious,
grepplabs kafka-proxy (the Tansu broker and proxy come from ``tests/peers``).

Peers are installed from registries by name and cached under
``~/.cache/kproxy-peers`` (``$KPROXY_PEERS_CACHE``); none of their code is in this
repository. A peer that cannot be installed raises :class:`Unavailable` with the
reason, and the harness records it instead of failing the whole run.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.peers.kafka_cluster import (
    MavenFetchFailed,
    cache_root,
    copy_maven_dependencies,
    file_lock,
    java_bin,
)
from tests.peers.net import (
    LOOPBACK,
    fetch_metadata,
    free_port,
    free_ports,
    wait_for_port,
    wait_until,
)
from tests.peers.procs import PeerProcess
from tests.peers.tansu import TansuBroker

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
KROXYLICIOUS_POM = BENCH / "kroxylicious" / "pom.xml"
#: Our stand-in for Kroxylicious's command line (kroxylicious-app is not on this
#: machine's Maven Central; kroxylicious-runtime, which holds the proxy, is).
KROXYLICIOUS_LAUNCHER = BENCH / "kroxylicious" / "KroxyliciousLauncher.java"
#: io.kroxylicious:kroxylicious-runtime release to fetch (override:
#: KPROXY_BENCH_KROXYLICIOUS_VERSION); 0.12.0 is the newest Maven Central serves here.
KROXYLICIOUS_VERSION = os.environ.get("KPROXY_BENCH_KROXYLICIOUS_VERSION", "0.12.0")
KROXYLICIOUS_MAIN = "KroxyliciousLauncher"
GREPPLABS_MODULE = "github.com/grepplabs/kafka-proxy"
GREPPLABS_VERSION = os.environ.get("KPROXY_BENCH_GREPPLABS_VERSION", "latest")

_CLK_TCK = os.sysconf("SC_CLK_TCK")


class Unavailable(RuntimeError):
    """A peer that cannot run on this machine; ``str(exc)`` says why."""


# ---------------------------------------------------------------------------------------
# /proc
# ---------------------------------------------------------------------------------------


def cpu_times(pid: int) -> tuple[float, float]:
    """(utime, stime) of ``pid`` (all its threads), in seconds: user space, and the
    kernel working for it (its syscalls, and on loopback the peer's TCP receive too)."""
    with open(f"/proc/{pid}/stat") as fh:
        text = fh.read()
    # The command name (field 2) may contain spaces: split after its closing paren.
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]) / _CLK_TCK, int(fields[12]) / _CLK_TCK


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads), in seconds."""
    return sum(cpu_times(pid))


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of ``pid`` in kB."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0])
    return out


def reset_peak_rss(pid: int) -> bool:
    """Reset ``pid``'s VmHWM to its current RSS (``echo 5 > /proc/PID/clear_refs``), so that
    the peak read after a run is the peak of that run. False if the kernel refused."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def maps_mention(pid: int, needle: str) -> bool:
    with open(f"/proc/{pid}/maps") as fh:
        return any(needle in line for line in fh)


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
# kproxy
# ---------------------------------------------------------------------------------------


class LoopbackPeer:
    """A proxy process listening on one loopback port: what every path's peer shares."""

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


class KproxyPeer(LoopbackPeer):
    """kproxy as a subprocess on uvloop or the standard asyncio loop."""

    def __init__(
        self,
        name: str,
        loop: str,
        bootstrap_servers: list[str],
        workdir: Path,
        *,
        dial_overrides: dict[str, str] | None = None,
        log_level: str = "WARNING",
        source: Path = REPO,
        python: str = sys.executable,
    ) -> None:
        self.name = name
        self.loop = loop
        self.source = source  # the checkout whose kproxy runs (bench ab: a baseline)
        # The interpreter it runs on (bench ab --baseline-python: another Python's).
        self.python = python
        self.workdir = workdir
        self.port, self.admin_port = free_ports(2)
        cluster: dict[str, Any] = {"bootstrap_servers": bootstrap_servers}
        if dial_overrides:
            cluster["dial_overrides"] = dial_overrides
        # Defaults everywhere else (events on, admin on, metrics on): what users run.
        self.config: dict[str, Any] = {
            "cluster": cluster,
            "listeners": {
                "bind_host": LOOPBACK,
                "advertised_host": LOOPBACK,
                "bootstrap_port": self.port,
                "broker_port_base": 0,
            },
            "admin": {"enabled": True, "bind_host": LOOPBACK, "port": self.admin_port},
            "events": {"enabled": True, "dir": str(workdir / "events")},
            "shutdown": {"grace_seconds": 1},
            "log": {"level": log_level},
            "runtime": {"event_loop": loop},
        }
        self.process: PeerProcess | None = None

    def start(self) -> KproxyPeer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.config
        if not _has_event_loop_setting(self.source):
            # A baseline from before `runtime.event_loop` (f3a28f3): it refuses the key
            # and runs on uvloop whenever uvloop is installed.
            if self.loop != "uvloop":
                raise RuntimeError(f"{self.name}: {self.source} can only run on uvloop")
            config = {k: v for k, v in config.items() if k != "runtime"}
        cfg = self.workdir / "kproxy.yaml"
        cfg.write_text(yaml.safe_dump(config))
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.source) + os.pathsep + env.get("PYTHONPATH", "")
        argv = [self.python, "-m", "kproxy", "run", "--config", str(cfg)]
        self.process = PeerProcess(
            self.name, argv, log_path=self.workdir / "kproxy.log", env=env, cwd=self.source
        ).start()
        proc = self.process
        try:
            wait_for_port(LOOPBACK, self.port, 30, alive=lambda: proc.running, what=self.name)
            if "tls" in self.config["listeners"]:
                wait_until(self._ready, 30, what=f"{self.name} /readyz")
            else:
                # First Metadata through it: kproxy learns the brokers, opens their ports.
                fetch_metadata(LOOPBACK, self.port, [], timeout=10)
        except (TimeoutError, RuntimeError, OSError) as exc:
            failure = proc.describe_failure()
            proc.stop(timeout=5)
            raise RuntimeError(f"{self.name} did not start: {exc}\n{failure}") from exc
        assert proc.pid is not None
        on_uvloop = maps_mention(proc.pid, "uvloop")
        if on_uvloop != (self.loop == "uvloop"):
            proc.stop(timeout=5)
            raise RuntimeError(f"{self.name}: wanted the {self.loop} loop, uvloop={on_uvloop}")
        return self

    def _ready(self) -> bool:
        url = f"http://{LOOPBACK}:{self.admin_port}/readyz"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def metrics(self) -> dict[str, float]:
        """Request/response frame and byte counts from kproxy's /metrics."""
        url = f"http://{LOOPBACK}:{self.admin_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode()
        keys = {
            ("kproxy_frames_total", "request"): "requests",
            ("kproxy_frames_total", "response"): "responses",
            ("kproxy_bytes_total", "request"): "request_bytes",
            ("kproxy_bytes_total", "response"): "response_bytes",
        }
        out = dict.fromkeys(keys.values(), 0.0)
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = keys.get((sample.name, sample.labels.get("direction", "")))
                if key is not None:
                    out[key] += sample.value
        return out


def _has_event_loop_setting(source: Path) -> bool:
    """Whether the kproxy in `source` takes `runtime.event_loop` (bench ab baselines
    may be older)."""
    return any("event_loop" in p.read_text() for p in (source / "kproxy").glob("config*.py"))


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


class PythonFloorPeer(ForwarderPeer):
    """`bench.python_floor` on uvloop: a Python proxy that forwards bytes and parses
    nothing, one listener per route."""

    def start(self) -> PythonFloorPeer:
        argv = [sys.executable, "-m", "bench.python_floor"]
        for port, backend in self.routes:
            argv += ["--route", f"{port}={backend}"]
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        self._run(argv, env)
        return self


# ---------------------------------------------------------------------------------------
# Kroxylicious (Java, Maven Central)
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


# ---------------------------------------------------------------------------------------
# grepplabs kafka-proxy (Go, through the Go module proxy)
# ---------------------------------------------------------------------------------------


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
