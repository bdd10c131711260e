"""An upstream whose broker is slower on a workload's first run (Apache Kafka's JVM)
gets one untimed run on the direct path before the workload's first round; the rounds
themselves are recorded as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import bench.harness
import bench.one_run
from bench.catalog import workloads
from bench.harness import Harness, Options


class Upstream:
    """What `Harness.run_workload` asks of an upstream, recording topics."""

    name = "kafka"

    def __init__(self, warms_up: bool) -> None:
        self.warms_up = warms_up
        self.created: list[str] = []
        self.dropped: list[str] = []

    def side(self, path: str) -> str:
        return "main"

    def sides(self) -> list[str]:
        return ["main"]

    def direct_bootstrap(self) -> str:
        return "127.0.0.1:1"

    def fill_bootstrap(self, side: str) -> str:
        return "127.0.0.1:1"

    def create_topic(self, topic: str, partitions: int, side: str) -> None:
        self.created.append(topic)

    def drop_topics(self, topics: list[str]) -> None:
        self.dropped += topics

    def broker_pid(self, side: str) -> int | None:
        return None


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warms_up: bool, workload: str
         ) -> tuple[list[tuple[str, str]], list[dict[str, Any]], Upstream]:  # fmt: skip
    monkeypatch.setattr(bench.harness, "software_versions", dict)
    monkeypatch.setattr(bench.harness, "prefill", lambda *args, **kwargs: None)
    calls: list[tuple[str, str]] = []

    def generate(wl: Any, bootstrap: str, topic: str, *rest: Any) -> Any:
        calls.append((bootstrap, topic))
        return {"messages": 10, "bytes": 10_240, "msg_per_s": 1.0, "mb_per_s": 1.0}

    for module in (bench.harness, bench.one_run):  # the warm-up's client and a run's
        monkeypatch.setattr(module, "generate", generate)
    opts = Options(workloads=[workload], paths=["direct"], rounds=3, out_md=None,
                   out_json=tmp_path / "results.json", workdir=tmp_path / "work")  # fmt: skip
    harness = Harness(opts)
    wl = next(w for w in workloads(quick=True) if w.name == workload)
    harness.results["workloads"][wl.name] = {"runs": []}
    up = Upstream(warms_up)
    harness.run_workload(wl, up, {"direct": None})  # type: ignore[arg-type]
    return calls, harness.results["workloads"][wl.name]["runs"], up


def test_a_producer_warms_up_on_a_topic_of_its_own_then_the_rounds_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, runs, up = _run(tmp_path, monkeypatch, True, "kafka-produce-1KiB")
    assert calls[0] == ("127.0.0.1:1", "kafka-produce-1KiB-warm-up")
    assert [topic for _b, topic in calls[1:]] == [
        f"kafka-produce-1KiB-r{r}-direct" for r in range(3)
    ]
    assert "kafka-produce-1KiB-warm-up" in up.dropped
    assert [(run["round"], run["ok"]) for run in runs] == [(0, True), (1, True), (2, True)]


def test_a_consumer_warms_up_on_the_rounds_topic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, runs, _up = _run(tmp_path, monkeypatch, True, "kafka-consume-1KiB")
    assert [topic for _b, topic in calls] == ["kafka-consume-1KiB-data"] * 4
    assert len(runs) == 3


def test_an_upstream_that_does_not_warm_up_runs_the_rounds_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, runs, up = _run(tmp_path, monkeypatch, False, "kafka-produce-1KiB")
    assert len(calls) == len(runs) == 3
    assert not any("warm-up" in topic for topic in up.created)


class Proxy:
    bootstrap = "127.0.0.1:2"
    pid = None


def test_on_apache_kafka_each_path_writes_to_a_broker_holding_no_earlier_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's topic is dropped before the next path's is created, not at the round's end."""
    monkeypatch.setattr(bench.harness, "software_versions", dict)
    up = Upstream(warms_up=False)
    alive_at_create: list[list[str]] = []
    create = up.create_topic

    def create_topic(topic: str, partitions: int, side: str) -> None:
        alive_at_create.append([t for t in up.created if t not in up.dropped])
        create(topic, partitions, side)

    up.create_topic = create_topic  # type: ignore[method-assign]
    monkeypatch.setattr(bench.one_run, "generate", lambda *args: {"messages": 10, "bytes": 10,
                        "msg_per_s": 1.0, "mb_per_s": 1.0})  # fmt: skip
    opts = Options(workloads=["kafka-produce-1KiB"], paths=["direct", "haproxy"], rounds=2,
                   out_md=None, out_json=tmp_path / "results.json",
                   workdir=tmp_path / "work")  # fmt: skip
    harness = Harness(opts)
    wl = next(w for w in workloads(quick=True) if w.name == "kafka-produce-1KiB")
    harness.results["workloads"][wl.name] = {"runs": []}
    harness.run_workload(wl, up, {"direct": None, "haproxy": Proxy()})  # type: ignore[arg-type]
    assert len(up.created) == 4
    assert alive_at_create == [[], [], [], []]
    assert up.dropped == up.created
