"""`kproxy analyze` on real local Spark beyond the hand-written log's figures: inputs
given as globs and URIs, the Spark UI off, empty and missing input, a plot that folds
quiet topics, quorum leader changes beside the partitions', the command line without
matplotlib, and the job file run by spark-submit (docs/peers.md §4).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("matplotlib")

from pyspark.sql import SparkSession

from kproxy import cli as kproxy_cli
from kproxy.analytics import inputs as inp
from kproxy.analytics import job
from kproxy.analytics.summary import summary_text
from tests.hand_log import EXPECTED_SUMMARY, A, B, at, lc, write_hand_log

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_inputs_as_globs_and_uris(spark: SparkSession, tmp_path: Path) -> None:
    logs = write_hand_log(tmp_path / "logs")
    inputs = [
        str(logs / "events-*.jsonl"),  # a glob: proxy A's file (39 non-blank lines)
        (logs / "host-b" / "events-20261122T100000-app-2-200-000000.jsonl.gz").as_uri(),
    ]
    inp.check_inputs(spark, inputs)
    lines = inp.read_lines(spark, inputs)
    assert lines.count() == 45
    files = {r["file"].rsplit("/", 1)[1] for r in lines.select("file").distinct().collect()}
    assert files == {
        "events-20261122T100000-app-1-100-000000.jsonl",
        "events-20261122T100000-app-2-200-000000.jsonl.gz",
    }


def test_spark_ui_is_off_unless_asked(spark: SparkSession) -> None:
    assert spark.conf.get("spark.ui.enabled") == "false"
    assert spark.sparkContext.uiWebUrl is None


# -- empty and missing input ---------------------------------------------------------------------


def test_empty_input_gives_an_empty_report(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "events-empty.jsonl").write_text("\n\n")
    out = tmp_path / "report"
    a = job.analyze(spark, [str(tmp_path / "logs")], str(out), stream=io.StringIO())
    assert (a.quality.lines, a.quality.events, a.quality.rejected) == (0, 0, 0)
    assert a.plots == {}
    page = (out / "report.html").read_text()
    assert "The input holds no events" in page and "<img" not in page
    f = json.loads((out / "summary.json").read_text())
    assert f["events"] == 0 and f["redirects"]["total"] == 0 and f["recovery"]["all"] is None
    assert "the input holds no events: the report is empty" in summary_text(a, "r")


def test_leader_moves_plot_folds_quiet_topics(spark: SparkSession, tmp_path: Path) -> None:
    """Ten topics: the plot names the eight with the most moves and counts the other
    two as "(other topics)", bucket by bucket. Topic tN moves N + 1 times (t0 once ...
    t9 ten times), every move 1 s after the last (one 1 s bar each; 55 moves in 54 s);
    t0 and t1 are the quiet two: 1 + 2 = 3 moves, at 0 s, 1 s and 2 s."""
    lines, second = [], 0
    for n in range(10):
        for epoch in range(n + 1):
            lines.append(
                lc(second, A, f"t{n}", 0, (1 + epoch % 2, 2 - epoch % 2), (epoch, epoch + 1))
            )
            second += 1
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "events-folding.jsonl").write_text("\n".join(lines) + "\n")
    a = job.analyze(spark, [str(tmp_path / "logs")], str(tmp_path / "out"), stream=io.StringIO())
    assert a.bucket_seconds == 1
    plotted = a.rows("plot_moves_over_time")
    other = [(r["bucket_start"], r["moves"]) for r in plotted if r["label"] == "(other topics)"]
    assert other == [(at("10:00:00"), 1), (at("10:00:01"), 1), (at("10:00:02"), 1)]
    assert {r["label"] for r in plotted} == {"(other topics)"} | {f"t{n}" for n in range(2, 10)}
    assert sum(r["moves"] for r in plotted) == 55
    assert "leader_moves_over_time" in a.plots


def test_quorum_leader_changes_stand_beside_the_partitions(
    spark: SparkSession, tmp_path: Path
) -> None:
    """KRaft quorum moves (`__cluster_metadata`, controllers 101-103) get their own table,
    one row a move however many proxies saw it, and stay out of the brokers' tables."""
    meta, meta_id = "__cluster_metadata", "00000000-0000-0000-0000-000000000001"
    lines = [
        lc(0, A, "orders", 0, (1, 2), (4, 5)),
        lc(1, A, meta, 0, (101, 102), (1, 2), "BeginQuorumEpoch"),
        lc(1.5, B, meta, 0, (101, 102), (1, 2), "Fetch", topic_id=meta_id),
        lc(9, B, meta, 0, (102, 103), (2, 3), "Vote"),
    ]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "events-quorum.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    a = job.analyze(spark, [str(tmp_path / "logs")], str(out), stream=io.StringIO())
    assert a.rows("quorum_leader_changes") == [
        {
            "ts": at("10:00:01"),
            "old_leader": 101,
            "new_leader": 102,
            "old_epoch": 1,
            "new_epoch": 2,
            "source_api": "BeginQuorumEpoch",
            "proxies": 2,
        },
        {
            "ts": at("10:00:09"),
            "old_leader": 102,
            "new_leader": 103,
            "old_epoch": 2,
            "new_epoch": 3,
            "source_api": "Vote",
            "proxies": 1,
        },
    ]
    assert [r["topic"] for r in a.rows("leader_changes_by_topic")] == ["orders"]
    assert {r["broker"] for r in a.rows("leadership_by_broker")} == {1, 2}
    f = json.loads((out / "summary.json").read_text())
    assert f["leader_changes"]["quorum_moves"] == 2 and f["leader_changes"]["moves"] == 1
    page = (out / "report.html").read_text()
    assert "KRaft controller quorum" in page and "BeginQuorumEpoch" in page
    assert "KRaft quorum: 2 leader moves" in summary_text(a, "r")


def test_missing_input_is_an_input_error(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(inp.InputError, match=r"no such file or directory: .*nothing-here"):
        job.analyze(spark, [str(tmp_path / "nothing-here*")], str(tmp_path / "out"))


def test_missing_input_exits_2_with_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kproxy", "analyze", str(tmp_path / "nope"), "--out", "x"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert f"kproxy analyze: no such file or directory: {tmp_path / 'nope'}\n" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_a_missing_local_input_is_refused_before_spark_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in a path costs no Spark start (seconds): checked first, in Python."""
    import kproxy.analytics.session

    def no_spark(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark was started for an input that names nothing")

    monkeypatch.setattr(kproxy.analytics.session, "build_session", no_spark)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    missing = str(tmp_path / "doesnotexist")
    assert kproxy_cli.main(["analyze", missing, "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"kproxy analyze: no such file or directory: {missing}\n"
    assert not (tmp_path / "out").exists()


def test_only_local_paths_are_checked_before_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Remote inputs, Hadoop's own globs and a cluster's paths are Spark's to check."""
    from kproxy.analytics.cli import missing_local_inputs

    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    (tmp_path / "events-1.jsonl").write_text("")
    here, nowhere = str(tmp_path / "events-*.jsonl"), str(tmp_path / "nope*")
    inputs = [
        here,
        nowhere,
        f"file://{nowhere}",
        "s3a://b/k/",
        "kafka://h:1/t",
        f"{nowhere}{{a,b}}",
    ]
    assert missing_local_inputs(inputs, "local[*]") == [nowhere, f"file://{nowhere}"]
    assert missing_local_inputs(inputs, None) == [nowhere, f"file://{nowhere}"]
    assert missing_local_inputs(inputs, "spark://master:7077") == []
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    assert missing_local_inputs(inputs, "local[*]") == []


def test_without_matplotlib_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert kproxy_cli.main(["analyze", "x", "--out", "unused"]) == 2
    assert capsys.readouterr().err == kproxy_cli.ANALYZE_HINT + "\n"


# -- spark-submit -----------------------------------------------------------------------------


def spark_submit() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-submit"


def test_spark_submit_runs_the_job_file(tmp_path: Path) -> None:
    """The job is a plain PySpark application; spark-submit (shipped inside the pyspark
    package) picks the master. The process runs in another time zone than UTC: the
    summary still shows the log's UTC times."""
    logs = write_hand_log(tmp_path / "logs")
    out = tmp_path / "report"
    env = {
        **os.environ,
        "TZ": "America/New_York",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    result = subprocess.run(
        [
            str(spark_submit()),
            "--master",
            "local[2]",
            "--conf",
            "spark.ui.enabled=false",
            str(REPO / "kproxy" / "analytics" / "job.py"),
            str(logs),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # spark-submit merges the Python process's stderr (the progress lines) into stdout.
    assert result.stdout.endswith(EXPECTED_SUMMARY.format(report=out / "report.html"))
    assert "[8/8] report" in result.stdout
    assert (out / "report.html").is_file() and (out / "tables" / "clients").is_dir()
