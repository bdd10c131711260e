"""kproxy.cli.main in process: the collaborators it imports lazily (the demo, the
analytics job, the app) are handed what the command line said, and a missing extra is
one clear line, not a traceback."""

from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from kproxy import cli
from kproxy.config.settings import Settings


def test_demo_without_confluent_kafka(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # makes the import fail
    assert cli.main(["demo"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "kproxy demo needs the demo extra: pip install -e '.[demo]' (in a kproxy clone)\n"


def test_a_kafka_sink_without_confluent_kafka_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "kproxy.yaml"
    config.write_text("cluster: {bootstrap_servers: [a:1]}\nevents: {sink: [file, kafka]}\n")
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # makes the import fail
    assert cli.main(["run", "--config", str(config)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        err == "events.sink kafka needs the kafka extra: "
        "pip install -e '.[kafka]' (in a kproxy clone)\n"
    )


def test_demo_passes_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []

    def run_demo(duration: float | None, brokers: int, leader_interval: float, port: int) -> int:
        calls.append((duration, brokers, leader_interval, port))
        return 3

    monkeypatch.setitem(sys.modules, "confluent_kafka", types.ModuleType("confluent_kafka"))
    fake = types.ModuleType("kproxy.demo.run")
    fake.run_demo = run_demo  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kproxy.demo.run", fake)

    assert cli.main(["demo"]) == 3
    assert cli.main(["demo", "--duration", "2.5", "--brokers", "5", "--leader-interval", "1"]) == 3
    assert cli.main(["demo", "--port", "19092"]) == 3
    assert calls == [(None, 3, 5.0, 0), (2.5, 5, 1.0, 0), (None, 3, 5.0, 19092)]


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--brokers", "0"],
        ["demo", "--duration", "-1"],
        ["demo", "--brokers", "x"],
        ["demo", "--port", "70000"],
        ["demo", "--port", "x"],
    ],
)
def test_demo_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2


def test_analyze_without_pyspark_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    assert cli.main(["analyze", "events/"]) == 2
    assert capsys.readouterr().err == (
        "kproxy analyze needs the analytics extra: "
        "pip install -e '.[analytics]' (in a kproxy clone)\n"
    )


def test_analyze_passes_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[argparse.Namespace] = []

    def run_analyze(args: argparse.Namespace) -> int:
        seen.append(args)
        return 0

    monkeypatch.setitem(sys.modules, "pyspark", types.ModuleType("pyspark"))
    fake = types.ModuleType("kproxy.analytics.cli")
    fake.run_analyze = run_analyze  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kproxy.analytics.cli", fake)

    assert cli.main(["analyze", "a.jsonl", "b/"]) == 0
    assert (
        cli.main(["analyze", "x", "--out", "report", "--master", "spark://m:7077", "--spark-ui"])
        == 0
    )
    first, second = seen
    assert (first.inputs, first.out, first.master, first.spark_ui) == (
        ["a.jsonl", "b/"],
        "kproxy-analysis",
        "local[*]",
        False,
    )
    assert (second.inputs, second.out, second.master, second.spark_ui) == (
        ["x"],
        "report",
        "spark://m:7077",
        True,
    )


def test_run_in_process_passes_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "kproxy.yaml"
    config.write_text("cluster:\n  bootstrap_servers: ['broker-1.kafka:9092']\n")
    received: list[Settings] = []
    levels: list[str] = []

    def run(settings: Settings, config_path: str) -> int:
        received.append(settings)
        return 0

    fake = types.ModuleType("kproxy.app")
    fake.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kproxy.app", fake)
    monkeypatch.setattr(cli, "configure_logging", levels.append)
    monkeypatch.setenv(cli.CONFIG_ENV, str(config))

    assert cli.main(["run", "--log-level", "error"]) == 0
    (settings,) = received
    assert settings.log.level == "ERROR"
    assert levels == ["ERROR"]
    assert settings.cluster.bootstrap_servers == (("broker-1.kafka", 9092),)
