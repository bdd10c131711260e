"""kproxy as a benchmark peer: a subprocess of a checkout's kproxy (this one, or a
`bench ab` baseline's) on uvloop or the standard loop, with the defaults users run.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from bench.peers import REPO, LoopbackPeer, env_with_path
from tests.peers.net import LOOPBACK, fetch_metadata, free_ports, wait_for_port, wait_until
from tests.peers.procs import PeerProcess


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
    ) -> None:
        self.name = name
        self.loop = loop
        self.source = source  # the checkout whose kproxy runs (bench ab: a baseline)
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

    def serve_with_workers(self, count: int, node_ids: list[int]) -> None:
        """`runtime.workers: count`: every worker binds the same ports, so each node gets
        a port chosen now (`node_port_overrides`) rather than by the OS at bind time."""
        listeners = self.config["listeners"]
        listeners["broker_port_base"] = 1024  # never used: every node has its own port
        listeners["max_node_id"] = max(node_ids)
        listeners["node_port_overrides"] = dict(
            zip(node_ids, free_ports(len(node_ids)), strict=True)
        )
        self.config["runtime"]["workers"] = count

    def write_config(self) -> Path:
        """The configuration file this kproxy runs with, written into its work directory."""
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
        return cfg

    def config_error(self) -> str | None:
        """What this kproxy's own `check-config` says against its configuration, or None
        when it takes it (the source's and the interpreter's kproxy, not this one's)."""
        config = str(self.write_config())
        argv = [sys.executable, "-m", "kproxy", "check-config", "--config", config]
        env = env_with_path(self.source)
        done = subprocess.run(argv, env=env, cwd=self.source, capture_output=True, text=True,
                              timeout=60, check=False)  # fmt: skip
        return None if done.returncode == 0 else (done.stderr or done.stdout).strip()

    def start(self) -> KproxyPeer:
        cfg = self.write_config()
        env = env_with_path(self.source)
        argv = [sys.executable, "-m", "kproxy", "run", "--config", str(cfg)]
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
        self.require_loop(self.loop)
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
    modules = [*(source / "kproxy").glob("config*.py"), *(source / "kproxy").glob("config/*.py")]
    return any("event_loop" in p.read_text() for p in modules)
