"""What `kproxy analyze` leaves in its output directory for the small hand-written event
log, on real local Spark: summary.json and the summary text, report.html and its plots,
the Parquet tables, and the progress it prints (tests/hand_log.py; the same run as
test_analytics_spark.py's)."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("matplotlib")

from pyspark.sql import SparkSession

from kproxy.analytics.summary import summary_text
from tests.hand_log import EXPECTED_SUMMARY, Hand

pytestmark = pytest.mark.slow

STEPS = [
    "reading events",
    "overview",
    "leader changes",
    "redirects",
    "recoveries",
    "request latency",
    "clients and topics",
    "report",
]
PLOTS = [
    "latency",
    "leader_moves_over_time",
    "leadership_by_broker",
    "most_affected",
    "recovery",
    "redirects_by_api",
    "redirects_by_route",
]


def test_summary_json_and_text(hand: Hand) -> None:
    a, out, _ = hand
    f = json.loads((out / "summary.json").read_text())
    assert f["events"] == 35 and f["lines"] == 45 and f["proxies"] == 2
    assert (f["first_ts"], f["last_ts"]) == (
        "2026-11-22T10:00:00.000000Z",
        "2026-11-22T10:06:40.000000Z",
    )
    assert f["rejected"] == {
        "total": 10,
        "malformed": 5,
        "unknown_type": 3,
        "newer_schema": 2,
        "unknown_types": ["future_thing", "quota_throttle"],
        "newest_schema": 3,
    }
    assert f["leader_changes"] == {
        "events": 9,
        "moves": 7,
        "topics": 3,
        "quorum_moves": 0,
        "brokers": {
            "1": {"gained": 2, "lost": 4},
            "2": {"gained": 4, "lost": 1},
            "3": {"gained": 1, "lost": 1},
        },
    }
    assert f["redirects"] == {
        "total": 6,
        "fast_path": 4,
        "leader_only": 1,
        "no_leader": 1,
        "with_leader": 5,
        "endpoint_share": pytest.approx(4 / 6),
    }
    all_paths = {
        "recoveries": 6,
        "p50": 8.0,
        "p90": 60.0,
        "p99": 96.0,
        "max": 100.0,
        "mean": 142 / 6,
    }
    assert f["recovery"]["all"] == {k: pytest.approx(v) for k, v in all_paths.items()}
    assert f["recovery"]["with_endpoint"]["recoveries"] == 4
    assert f["recovery"]["without_endpoint"]["recoveries"] == 2
    assert f["most_affected"]["clients"][0] == {"client_id": "c1", "redirects": 2}
    assert f["most_affected"]["topics"][0] == {"topic": "orders", "redirects": 4}
    report = str(out / "report.html")
    assert summary_text(a, report) == EXPECTED_SUMMARY.format(report=report)


def test_report_html_and_plots(hand: Hand) -> None:
    a, out, _ = hand
    page = (out / "report.html").read_text()
    for figure in ("35", "7", "6", "66.7%", "8.00", "96.0"):  # the header's cards
        assert f'<div class="v">{figure}</div>' in page
    # A client id is the client's to choose: escaped, never markup.
    assert "&lt;c3&gt;" in page and "<c3>" not in page
    assert sorted(a.plots) == PLOTS
    for name in PLOTS:
        assert f'<img src="plots/{name}.png"' in page
        assert (out / "plots" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_parquet_tables(hand: Hand, spark: SparkSession) -> None:
    a, out, _ = hand
    events = spark.read.parquet(str(out / "events"))
    assert events.count() == 35
    by_type = {r["type"]: r["count"] for r in events.groupBy("type").count().collect()}
    assert by_type["redirect"] == 6 and by_type["request_sample"] == 8
    written = sorted(p.name for p in (out / "tables").iterdir())
    assert written == sorted(n for n in a.tables if not n.startswith("plot_"))
    routes = spark.read.parquet(str(out / "tables" / "redirects_by_route"))
    assert [r.asDict() for r in routes.collect()] == a.rows("redirects_by_route")
    recovery = spark.read.parquet(str(out / "tables" / "recovery_percentiles"))
    assert recovery.count() == 7  # all, 2 paths, 4 clients


def test_progress_shows_steps_and_stages(hand: Hand) -> None:
    text = hand[2]
    steps = re.findall(r"^\[(\d)/8\] ([a-z ]+) \(\d+\.\d s\)$", text, re.MULTILINE)
    assert steps == [(str(i), name) for i, name in enumerate(STEPS, 1)]
    assert re.search(r"^  stage \d+: \d+/\d+ tasks \(\d+%\)$", text, re.MULTILINE), text
