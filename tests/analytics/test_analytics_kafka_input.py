"""`kafka://` inputs and the live report of `kproxy analyze --follow` (no cluster)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from kproxy.analytics.follow_report import render_follow_report
from kproxy.analytics.kafka_input import (
    CONNECTOR,
    KafkaInput,
    KafkaInputError,
    kafka_source_options,
    packages_for,
    parse_kafka_input,
)
from kproxy.analytics.output import replace_file


def test_kafka_inputs_parse() -> None:
    assert parse_kafka_input("kafka://a:1/ev") == KafkaInput("a:1", "ev")
    assert parse_kafka_input("kafka://a:1,b:2,/ev").bootstrap == "a:1,b:2"
    assert parse_kafka_input("kafka://[::1]:9092/ev").uri == "kafka://[::1]:9092/ev"
    for bad in ("kafka://a:1", "kafka:///ev", "kafka://a/ev", "kafka://a:1/ev/x", "a:1/ev"):
        with pytest.raises(KafkaInputError):
            parse_kafka_input(bad)


def test_source_options_batch_and_stream() -> None:
    source = KafkaInput("a:1", "ev")
    batch = kafka_source_options(source, {"kafka.security.protocol": "SSL"}, streaming=False)
    assert batch == {
        "kafka.bootstrap.servers": "a:1",
        "subscribe": "ev",
        "startingOffsets": "earliest",
        "endingOffsets": "latest",
        "kafka.security.protocol": "SSL",
    }
    stream = kafka_source_options(source, {"startingOffsets": "latest"}, streaming=True)
    assert "endingOffsets" not in stream and stream["startingOffsets"] == "latest"


def test_the_connector_matches_the_running_spark() -> None:
    import pyspark

    assert f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}" == CONNECTOR
    assert packages_for(["dir", "kafka://a:1/ev"]) == [CONNECTOR]
    assert packages_for(["dir"]) == []


def test_the_live_report_says_how_far_the_data_reaches() -> None:
    w = datetime.datetime(2026, 11, 23, 10, 0)
    page = render_follow_report(
        {
            "source": "kafka://a:1/ev",
            "data_up_to": "2026-11-23T10:01:02.000000Z",
            "events": 1234,
            "late": 1,
            "batches": 3,
            "window_seconds": 60,
        },
        {
            "leader_changes_per_window": [{"window_start": w, "topic": "<t>", "moves": 2}],
            "late_events": [{"window_start": w, "type": "redirect", "events": 1}],
            "switchovers": [
                {
                    "ts": w,
                    "proxy": "p-1",
                    "trigger": "failover",
                    "from_cluster": "blue",
                    "to_cluster": "green",
                    "outcome": "completed",
                    "fence_ms": 12.5,
                    "ms": 40.0,
                    "drained": 3,
                    "cut": 0,
                    "transactions_aborted": 0,
                    "reason": None,
                    "detail": None,
                }
            ],
        },
    )
    assert "2026-11-23T10:01:02.000000Z" in page and "data up to" in page
    assert "<h2>Cluster switchovers</h2>" in page and "failover" in page
    assert "&lt;t&gt;" in page and "<t>" not in page
    assert "1,234" in page


def test_the_live_files_are_replaced_whole(tmp_path: Path) -> None:
    # A dashboard polling status.json may open it while a rebuild writes the next one:
    # it must read the old file to its end, not a truncated or half-written one.
    status = tmp_path / "status.json"
    replace_file(status, '{"batches": 1}')
    with status.open() as reading:
        replace_file(status, '{"batches": 2, "events": 10}')
        assert reading.read() == '{"batches": 1}'
    assert status.read_text() == '{"batches": 2, "events": 10}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["status.json"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["kafka://a:1/ev", "dir"], "--follow takes one input (a topic or a directory)"),
        (["kafka://a:1"], "kafka://a:1: expected kafka://HOST:PORT[,HOST:PORT...]/TOPIC"),
    ],
)
def test_bad_follow_inputs_are_one_line_and_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kproxy.cli import main

    code = main(["analyze", "--follow", *argv, "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"kproxy analyze: {message}" in err and "Traceback" not in err
