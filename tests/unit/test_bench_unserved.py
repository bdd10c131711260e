"""A path that cannot serve a workload's load generator (the Tansu proxy and Kafka's Java
perf tools) has its runs of that workload recorded as skipped, with the reason, instead
of each waiting out its timeout; its other workloads run as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import bench.harness
import bench.one_run
from bench.catalog import workloads
from bench.harness import Harness, Options
from bench.report import render_workload
from bench.upstreams import unserved_reason


class Upstream:
    """What `Harness.run_workload` asks of an upstream."""

    name = "kafka"
    warms_up = False

    def side(self, path: str) -> str:
        return "main"

    def sides(self) -> list[str]:
        return ["main"]

    def direct_bootstrap(self) -> str:
        return "127.0.0.1:1"

    def fill_bootstrap(self, side: str) -> str:
        return "127.0.0.1:1"

    def create_topic(self, topic: str, partitions: int, side: str) -> None:
        pass

    def drop_topics(self, topics: list[str]) -> None:
        pass

    def broker_pid(self, side: str) -> int | None:
        return None


class Proxy:
    bootstrap = "127.0.0.1:2"
    pid = None


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workload: str
         ) -> tuple[list[str], dict[str, Any]]:  # fmt: skip
    monkeypatch.setattr(bench.harness, "software_versions", dict)
    monkeypatch.setattr(bench.harness, "prefill", lambda *args, **kwargs: None)
    bootstraps: list[str] = []

    def generate(wl: Any, up: Any, side: str, bootstrap: str, *rest: Any) -> Any:
        bootstraps.append(bootstrap)
        return {"messages": 10, "bytes": 10_240, "msg_per_s": 1.0, "mb_per_s": 1.0}

    monkeypatch.setattr(bench.one_run, "generate", generate)
    opts = Options(workloads=[workload], paths=["direct", "tansu-proxy"], rounds=2,
                   out_md=None, out_png=None, out_json=tmp_path / "results.json",
                   workdir=tmp_path / "work")  # fmt: skip
    harness = Harness(opts)
    wl = next(w for w in workloads(quick=True) if w.name == workload)
    harness.results["workloads"][wl.name] = {"runs": [], "upstream": "kafka",
                                             "metrics": [], "title": wl.title}  # fmt: skip
    harness.run_workload(wl, Upstream(), {"direct": None, "tansu-proxy": Proxy()})  # type: ignore[arg-type]
    return bootstraps, harness.results


def test_the_tansu_proxy_is_not_given_the_java_perf_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstraps, results = _run(tmp_path, monkeypatch, "kafka-perf-produce-1KiB")
    assert bootstraps == ["127.0.0.1:1"] * 2  # direct's two rounds, nothing through tansu
    runs = results["workloads"]["kafka-perf-produce-1KiB"]["runs"]
    skipped = [run for run in runs if run["path"] == "tansu-proxy"]
    reason = unserved_reason("tansu-proxy", "kafka-perf-test")
    assert reason is not None and "ApiVersions v4" in reason
    assert [(run["round"], run["ok"], run["skipped"]) for run in skipped] == [
        (0, False, True),
        (1, False, True),
    ]
    assert all(run["error"] == f"unavailable: {reason}" for run in skipped)
    section = "\n".join(render_workload(results, "kafka-perf-produce-1KiB"))
    assert "| tansu-proxy | - |" in section
    assert f"- tansu-proxy: unavailable: {reason}" in section
    assert "a run failed" not in section


def test_the_tansu_proxy_still_carries_librdkafka(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstraps, results = _run(tmp_path, monkeypatch, "kafka-produce-1KiB")
    assert bootstraps.count(Proxy.bootstrap) == 2
    assert "unavailable" not in results["workloads"]["kafka-produce-1KiB"]
    assert unserved_reason("tansu-proxy", "confluent-kafka") is None
    assert unserved_reason("kproxy-uvloop", "kafka-perf-test") is None
