"""A real Prometheus server (Debian's `prometheus`) scraping targets on loopback."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from tests.peers.net import LOOPBACK, free_port, wait_for_port, wait_until
from tests.peers.procs import PeerProcess


class Prometheus:
    """`prometheus` scraping `targets` (host:port) every `interval` seconds, evaluating
    the alerting rules in `rule_files` every second."""

    def __init__(
        self,
        workdir: Path,
        targets: list[str],
        interval: float = 1.0,
        rule_files: tuple[Path, ...] = (),
    ) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            raise FileNotFoundError("prometheus is not installed (apt-get install prometheus)")
        self.port = free_port()
        self.workdir = workdir
        config = workdir / "prometheus.yml"
        config.write_text(
            json.dumps(
                {
                    "global": {
                        "scrape_interval": f"{int(interval * 1000)}ms",
                        "evaluation_interval": "1s",
                    },
                    "scrape_configs": [
                        {"job_name": "kproxy", "static_configs": [{"targets": targets}]}
                    ],
                    "rule_files": [str(f) for f in rule_files],
                }
            )
        )
        self.process = PeerProcess(
            "prometheus",
            [
                binary,
                f"--config.file={config}",
                f"--web.listen-address={LOOPBACK}:{self.port}",
                f"--storage.tsdb.path={workdir / 'data'}",
                "--storage.tsdb.retention.time=1h",
            ],
            log_path=workdir / "prometheus.log",
        )

    def start(self) -> Self:
        self.process.start()
        wait_for_port(LOOPBACK, self.port, 30, alive=lambda: self.process.running)
        # The port opens before the storage does; until then the API answers 503.
        wait_until(self._ready, 30, what="Prometheus ready")
        return self

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{LOOPBACK}:{self.port}/-/ready", timeout=5):
                return True
        except urllib.error.HTTPError:
            return False

    def api(self, path: str, **params: str) -> Any:
        url = f"http://{LOOPBACK}:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = json.loads(resp.read())
        assert body["status"] == "success", body
        return body["data"]

    def alerts(self) -> dict[str, str]:
        """Alert name -> state (pending, firing) of the active alerts."""
        return {a["labels"]["alertname"]: a["state"] for a in self.api("alerts")["alerts"]}

    def query(self, expr: str) -> dict[tuple[tuple[str, str], ...], float]:
        """Instant query: {sorted label pairs (without __name__): value}."""
        out = {}
        for series in self.api("query", query=expr)["result"]:
            labels = tuple(sorted((k, v) for k, v in series["metric"].items() if k != "__name__"))
            out[labels] = float(series["value"][1])
        return out

    def wait_for_scrape_after(self, timestamp: float, timeout: float = 30) -> None:
        """Wait until every target was scraped (successfully) after `timestamp`."""

        def scraped() -> bool:
            targets = self.api("targets")["activeTargets"]
            return bool(targets) and all(
                t["health"] == "up" and _epoch(t["lastScrape"]) > timestamp for t in targets
            )

        wait_until(scraped, timeout, what="a Prometheus scrape", interval=0.2)

    def close(self) -> None:
        self.process.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _epoch(rfc3339: str) -> float:
    """Prometheus's RFC 3339 times carry nanoseconds and sometimes an offset."""
    import re
    from datetime import datetime

    text = re.sub(r"(\.\d{6})\d+", r"\1", rfc3339).replace("Z", "+00:00")
    return datetime.fromisoformat(text).timestamp()
