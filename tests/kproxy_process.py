"""Run a real kproxy process (`python -m kproxy run`) for integration tests."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from tests.peers.net import LOOPBACK, free_ports, port_open, wait_until

REPO = Path(__file__).resolve().parent.parent
# The line kproxy logs for every listener it opens (bootstrap and one per node).
LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+) for (\S+)")


def _limit_files(count: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


class KproxyProcess:
    """kproxy in a subprocess, configured from a dict merged over test defaults."""

    def __init__(self, tmp: Path, bootstrap_servers: list[str], **sections: Any) -> None:
        self.tmp = tmp
        self.bootstrap_port, self.admin_port = free_ports(2)
        config: dict[str, Any] = {
            "cluster": {"bootstrap_servers": bootstrap_servers},
            "listeners": {
                "bind_host": "127.0.0.1",
                "advertised_host": "127.0.0.1",
                "bootstrap_port": self.bootstrap_port,
                "broker_port_base": 0,
            },
            "admin": {"bind_host": "127.0.0.1", "port": self.admin_port},
            "events": {"dir": str(tmp / "events")},
            "shutdown": {"grace_seconds": 2},
            "log": {"level": "INFO"},
        }
        for name, values in sections.items():
            config.setdefault(name, {}).update(values)
        self.config = config
        self.bootstrap_port = config["listeners"]["bootstrap_port"]  # a test's own, if given
        self.config_path = tmp / "kproxy.yaml"
        self.log_path = tmp / "kproxy.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.bootstrap_port}"

    def start(
        self, extra_env: dict[str, str] | None = None, nofile: int | None = None
    ) -> KproxyProcess:
        """Start kproxy; `nofile` sets its own open-file limit (RLIMIT_NOFILE) only."""
        self.config_path.write_text(yaml.safe_dump(self.config))
        env = dict(os.environ)
        env.update(extra_env or {})
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kproxy", "run", "--config", str(self.config_path)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.tmp,
            preexec_fn=None if nofile is None else lambda: _limit_files(nofile),
        )
        try:
            wait_until(self._ready, 30, what="kproxy's bootstrap port")
        except TimeoutError:
            self.stop()
            raise
        return self

    def _ready(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"kproxy exited with {self.proc.returncode}:\n{self.log()}")
        return port_open(self.config["listeners"]["bind_host"], self.bootstrap_port)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def cpu_seconds(self) -> float:
        """User + system CPU time the kproxy process has used (/proc/PID/stat)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_bytes(self, field: str = "VmRSS") -> int:
        """Resident memory now (VmRSS) or at its peak (VmHWM), from /proc/PID/status."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no {field} in /proc/{self.pid}/status")

    def metric(self, name: str, **labels: str) -> float:
        """The samples of ``name`` with these labels from /metrics, summed over the labels
        not given, as Prometheus's ``sum`` would (0 when there is none): with
        ``cause="idle_timeout"`` alone, every listener's count."""
        from prometheus_client.parser import text_string_to_metric_families

        return sum(
            float(sample.value)
            for family in text_string_to_metric_families(self.metrics_text())
            for sample in family.samples
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def admin_get(self, path: str) -> tuple[int, bytes]:
        url = f"http://{LOOPBACK}:{self.admin_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def topology(self) -> Any:
        status, body = self.admin_get("/topology")
        assert status == 200, body
        return json.loads(body)

    def metrics_text(self) -> str:
        status, body = self.admin_get("/metrics")
        assert status == 200, body
        return body.decode()

    def listener_ports(self) -> dict[str, int]:
        """kproxy's listeners as it logged them: ``{"bootstrap": P, "node-1": P1, ...}``."""
        return {name: int(port) for port, name in LISTENING.findall(self.log())}

    def reload_with(self, change: dict[str, dict[str, Any]]) -> None:
        """Each section of ``change`` merged into the config file, then SIGHUP: kproxy's
        hot reload, as an operator edits the file and signals the process."""
        for section, values in change.items():
            self.config.setdefault(section, {}).update(values)
        self.config_path.write_text(yaml.safe_dump(self.config))
        assert self.proc is not None
        self.proc.send_signal(signal.SIGHUP)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int | None:
        code = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            code = self.proc.returncode
            self.proc = None
            self._log.close()
        return code

    def __enter__(self) -> KproxyProcess:
        # `with kp.start(nofile=...)` has started it already: a second start would leave
        # the first process running after the block.
        return self if self.proc is not None else self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
