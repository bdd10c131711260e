"""`kproxy analyze` on a small hand-written event log, on real local Spark (docs/peers.md §4).

Every expected figure below is worked out by hand from the lines in the log (the
comments show the arithmetic), not computed by the code under test. Percentiles are
exact with linear interpolation: for n sorted values v[0..n-1], p lies at rank
(n - 1) * p, between v[floor] and v[ceil].

The log, by label (A = proxy app-1-100, B = proxy app-2-200; times are seconds after
2026-11-22T10:00:00Z):

    moves  M1 orders/0 1->2 epoch 4->5 at 10.0 (A) and 10.2 (B): one move, two events
           M2 orders/1 1->3 epoch 7->8 at 11.0 (A)
           M3 payments/0 2->1 epoch 1->2 at 70.0 (A, with topic id id-pay)
           M4 orders/0 2->2 epoch 5->6 at 130.0 (A): re-election in place, nobody loses
           M5 orders/1 epoch 8->9 to 1: A (200.5) saw 3->1, B (200.0) missed M2 and saw
              1->1 from epoch 7; the newest old epoch (A's 8) names the loser: broker 3
           M6, M7 legacy/0 1->2 without epochs at 300.1 (A) and 300.0 (B): unmatched, two
    redirects R1..R6, recoveries V1..V6 (ms 2, 4, 10, 100, 20, 6), request samples.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("matplotlib")

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kproxy import cli as kproxy_cli
from kproxy.analytics import inputs as inp
from kproxy.analytics import job
from kproxy.analytics.model import Analysis
from kproxy.analytics.session import build_session
from kproxy.analytics.summary import summary_text

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
A, B = "app-1-100", "app-2-200"
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


def ts(seconds: float) -> str:
    """2026-11-22T10:00:00Z plus `seconds`, as kproxy writes it."""
    whole = int(seconds)
    micros = round((seconds - whole) * 1_000_000)
    m, s = divmod(whole, 60)
    return f"2026-11-22T10:{m:02d}:{s:02d}.{micros:06d}Z"


def at(hms: str) -> datetime:
    """A bucket start on 2026-11-22, UTC wall clock (as the tables are collected)."""
    return datetime.fromisoformat(f"2026-11-22T{hms}")


def ev(kind: str, seconds: float, proxy: str, **fields: Any) -> str:
    record = {"schema": 1, "type": kind, "ts": ts(seconds), "proxy": proxy, **fields}
    return json.dumps(record, separators=(",", ":"))


def lc(
    seconds: float,
    proxy: str,
    topic: str,
    p: int,
    move: tuple[int, int],
    epochs: tuple[int | None, int | None],
    src: str = "Metadata",
    topic_id: str | None = None,
) -> str:
    """A leader_change: `move` = (old leader, new leader), `epochs` = (old, new)."""
    return ev(
        "leader_change",
        seconds,
        proxy,
        topic=topic,
        topic_id=topic_id,
        partition=p,
        old_leader=move[0],
        new_leader=move[1],
        old_epoch=epochs[0],
        new_epoch=epochs[1],
        source_api=src,
    )


def rd(
    seconds: float,
    proxy: str,
    api: str,
    client: str | None,
    where: tuple[str | None, int],
    err: int,
    route: tuple[int | None, int | None],
    endpoint: bool,
    topic_id: str | None = None,
) -> str:
    """A redirect: `where` = (topic, partition), `route` = (from node, to node)."""
    return ev(
        "redirect",
        seconds,
        proxy,
        api=api,
        client_id=client,
        topic=where[0],
        topic_id=topic_id,
        partition=where[1],
        error_code=err,
        from_node=route[0],
        to_node=route[1],
        with_endpoint=endpoint,
    )


def rc(
    seconds: float,
    proxy: str,
    where: tuple[str | None, int],
    client: str | None,
    ms: float,
    endpoint: bool,
    topic_id: str | None = None,
) -> str:
    return ev(
        "recovery",
        seconds,
        proxy,
        topic=where[0],
        topic_id=topic_id,
        partition=where[1],
        client_id=client,
        ms=ms,
        with_endpoint=endpoint,
    )


def rs(seconds: float, proxy: str, api: str, total: float, upstream: float) -> str:
    return ev(
        "request_sample",
        seconds,
        proxy,
        api=api,
        version=9,
        client_id="c1",
        total_ms=total,
        upstream_ms=upstream,
    )


PROXY_A = [
    *(
        ev("node_discovered", 0, A, node_id=n, upstream=f"10.0.0.{n}:9092", advertised=f"b{n}:9092")
        for n in (1, 2, 3)
    ),
    ev("connection", 1, A, action="open", listener="bootstrap", cause=None),
    ev("connection", 1, A, action="open", listener="node-1", cause=None),
    ev("connection", 400, A, action="close", listener="node-1", cause="client_closed"),
    lc(10.0, A, "orders", 0, (1, 2), (4, 5)),  # M1 (also seen by B)
    lc(11.0, A, "orders", 1, (1, 3), (7, 8), "Produce"),  # M2
    lc(70.0, A, "payments", 0, (2, 1), (1, 2), "Fetch", topic_id="id-pay"),  # M3
    lc(130.0, A, "orders", 0, (2, 2), (5, 6)),  # M4: re-election in place
    lc(200.5, A, "orders", 1, (3, 1), (8, 9)),  # M5 (B saw it too, having missed M2)
    lc(300.1, A, "legacy", 0, (1, 2), (None, None)),  # M6: no epoch, cannot be matched
    rd(10.0, A, "Produce", "c1", ("orders", 0), 6, (1, 2), True),  # R1 fast path
    rd(11.0, A, "Produce", "c1", ("orders", 1), 6, (1, 3), True),  # R2 fast path
    rd(10.5, A, "Fetch", "c2", ("orders", 0), 74, (1, 2), False),  # R3 leader only
    rd(70.0, A, "Fetch", "c2", (None, 0), 6, (2, None), False, "id-pay"),  # R4 no leader
    rd(71.0, A, "Produce", None, ("payments", 0), 6, (None, 1), True),  # R5 via bootstrap
    rc(10.002, A, ("orders", 0), "c1", 2.0, True),  # V1
    rc(11.004, A, ("orders", 1), "c1", 4.0, True),  # V2
    rc(10.51, A, ("orders", 0), "c2", 10.0, False),  # V3
    rc(70.1, A, (None, 0), "c2", 100.0, False, topic_id="id-pay"),  # V4 (payments by id)
    rc(71.02, A, ("payments", 0), None, 20.0, True),  # V5
    rs(5, A, "Produce", 1.0, 0.5),
    rs(6, A, "Produce", 2.0, 1.5),
    rs(7, A, "Produce", 3.0, 2.5),
    rs(8, A, "Produce", 4.0, 3.5),
    rs(9, A, "Fetch", 10.0, 9.0),
    rs(9, A, "Fetch", 20.0, 19.0),
    rs(9, A, "Metadata", 5.0, 4.0),
]
PROXY_B = [
    lc(10.2, B, "orders", 0, (1, 2), (4, 5)),  # M1 again: one move, two events
    lc(200.0, B, "orders", 1, (1, 1), (7, 9), "Fetch"),  # M5 from a proxy that missed M2
    lc(300.0, B, "legacy", 0, (1, 2), (None, None)),  # M7: no epoch, counted on its own
    rd(200.0, B, "Fetch", "<c3>", ("orders", 1), 6, (3, 1), True),  # R6 fast path
    rc(200.006, B, ("orders", 1), "<c3>", 6.0, True),  # V6
    rs(9, B, "Produce", 5.0, 4.5),
]
REJECTS = [
    "not json at all",  # malformed
    '{"schema":1,"type":"redirect","ts":"2026-11-22T10:00:01.000000Z"',  # truncated
    # A field of the wrong JSON type: malformed.
    ev(
        "recovery",
        3,
        A,
        topic="t",
        topic_id=None,
        partition="zero",
        client_id=None,
        ms=1.0,
        with_endpoint=True,
    ),
    # A redirect without with_endpoint: malformed.
    ev(
        "redirect",
        3,
        A,
        api="Produce",
        client_id=None,
        topic="t",
        topic_id=None,
        partition=0,
        error_code=6,
        from_node=1,
        to_node=2,
    ),
    '{"schema":1,"type":"connection","ts":"yesterday","proxy":"p","action":"open",'
    '"listener":"bootstrap","cause":null}',  # bad timestamp: malformed
    ev("quota_throttle", 3, A, ms=5),  # unknown type
    ev("quota_throttle", 4, A, ms=6),  # unknown type
    ev("future_thing", 4, A),  # unknown type
    # Newer schemas (their fields may differ: not malformed).
    '{"schema":2,"type":"redirect","ts":"2026-11-22T10:00:01.000000Z","proxy":"p",'
    '"partition":"p-0"}',
    '{"schema":3,"type":"leader_change","ts":"2026-11-22T10:00:01.000000Z","proxy":"p"}',
]

# What `kproxy analyze` prints for this log, every figure worked out in the tests below.
EXPECTED_SUMMARY = """\
kproxy analyze: 35 events from 2 proxies, 2026-11-22 10:00:00 to 2026-11-22 10:06:40 UTC
  rejected lines: 5 malformed, 3 of unknown types (future_thing, quota_throttle), \
2 of a newer schema (up to 3)
  leader changes: 7 moves (9 events) on 3 topics; most gained: broker 2 (4), \
most lost: broker 1 (4)
  redirects: 6; with NodeEndpoints (KIP-951 fast path) 4 (66.7%), leader without \
endpoint 1, no leader (metadata refresh) 1
  recovery: 6 episodes; p50 8.00 ms, p90 60.0 ms, p99 96.0 ms, max 100 ms
    with NodeEndpoints: 4, p50 5.00 ms, p99 19.6 ms; without: 2, p50 55.0 ms, p99 99.1 ms
  latency p99 ms (total / upstream): Produce 4.96 / 4.46, Fetch 19.9 / 18.9, \
Metadata 5.00 / 4.00
  most affected: client c1 (2 redirects), topic orders (4 redirects)
report: {report}
"""


def write_hand_log(root: Path) -> Path:
    """Proxy A in a plain file (with blank lines and rejects), proxy B gzipped in a
    subdirectory: one input directory read recursively."""
    root.mkdir(parents=True, exist_ok=True)
    a_lines = [*PROXY_A[:10], "", *REJECTS, *PROXY_A[10:], "   "]
    (root / "events-20261122T100000-app-1-100-000000.jsonl").write_text(
        "\n".join(a_lines) + "\n", encoding="utf-8"
    )
    sub = root / "host-b"
    sub.mkdir()
    with gzip.open(sub / "events-20261122T100000-app-2-200-000000.jsonl.gz", "wt") as f:
        f.write("\n".join(PROXY_B) + "\n")
    return root


Hand = tuple[Analysis, Path, str]


def analyze_hand_log(tmp: Path) -> Hand:
    """The job over the hand-written log, on a session of its own, stopped after: what
    it found, its output directory and its progress lines. Run once per test session
    (the `hand` fixture of tests/conftest.py: the browser test reads the same report)."""
    logs = write_hand_log(tmp / "logs")
    out = tmp / "report"
    stream = io.StringIO()
    session = build_session("local[2]")
    try:
        analysis = job.analyze(
            session, [str(logs)], str(out), stream=stream, progress_interval=0.05
        )
    finally:
        session.stop()
    return analysis, out, stream.getvalue()


@pytest.fixture(scope="module")
def spark(hand: Hand) -> Iterator[SparkSession]:
    # After `hand`, whose session is stopped by then: this one is the module's own.
    session = build_session("local[2]")
    yield session
    session.stop()


def approx_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: pytest.approx(v) if isinstance(v, float) else v for k, v in r.items()} for r in rows
    ]


# -- input -------------------------------------------------------------------------------


def test_input_quality(hand: Hand) -> None:
    q = hand[0].quality
    # 29 lines of A + 6 of B + 10 rejects; the two blank lines are not lines.
    assert (q.lines, q.events) == (45, 35)
    assert (q.malformed, q.unknown_type, q.newer_schema, q.rejected) == (5, 3, 2, 10)
    assert q.unknown_types == ("future_thing", "quota_throttle")
    assert q.newest_schema == 3
    # The smallest line of each kind by its text, with the file it came from.
    assert q.examples["malformed"].endswith("-000000.jsonl: not json at all")
    assert q.examples["unknown_type"].endswith(
        '"type":"future_thing","ts":"2026-11-22T10:00:04.000000Z","proxy":"app-1-100"}'
    )
    assert '"schema":2' in q.examples["newer_schema"]


def test_event_counts_and_proxies(hand: Hand) -> None:
    a = hand[0]
    counts = {r["type"]: r["events"] for r in a.rows("event_counts")}
    assert counts == {
        "connection": 3,
        "leader_change": 9,  # 6 of A, 3 of B
        "node_discovered": 3,
        "recovery": 6,
        "redirect": 6,
        "request_sample": 8,  # 7 of A, 1 of B
    }
    assert a.rows("proxies") == [
        {"proxy": A, "events": 29, "first_ts": at("10:00:00"), "last_ts": at("10:06:40")},
        {"proxy": B, "events": 6, "first_ts": at("10:00:09"), "last_ts": at("10:05:00")},
    ]
    assert a.rows("connections") == [
        {"action": "close", "listener": "node", "cause": "client_closed", "connections": 1},
        {"action": "open", "listener": "bootstrap", "cause": None, "connections": 1},
        {"action": "open", "listener": "node", "cause": None, "connections": 1},
    ]


# -- leader changes --------------------------------------------------------------------------


def test_leader_changes_per_topic_and_broker(hand: Hand, spark: SparkSession) -> None:
    a, out, _ = hand
    # orders: M1 (2 events), M2, M4, M5 (2 events) on partitions 0 and 1;
    # legacy: M6 and M7 (no epochs: one move per line); payments: M3.
    assert a.rows("leader_changes_by_topic") == [
        {"topic": "orders", "moves": 4, "events": 6, "partitions": 2},
        {"topic": "legacy", "moves": 2, "events": 2, "partitions": 1},
        {"topic": "payments", "moves": 1, "events": 1, "partitions": 1},
    ]
    # gained: 1 <- M3, M5; 2 <- M1, M4, M6, M7; 3 <- M2.
    # lost:   1 <- M1, M2, M6, M7; 2 <- M3; 3 <- M5 (A's old epoch 8 beats B's 7).
    assert a.rows("leadership_by_broker") == [
        {"broker": 1, "gained": 2, "lost": 4, "net": -2},
        {"broker": 2, "gained": 4, "lost": 1, "net": 3},
        {"broker": 3, "gained": 1, "lost": 1, "net": 0},
    ]
    # Moves from 10.0 s (M1) to 300.1 s (M6): 290.1 s in 5 s bars is 58 bars (<= 60).
    # A move's time is its first sighting: M5 at B's 200.0.
    assert a.bucket_seconds == 5
    # In Parquet only; the plot's copy names the same topics (up to 8 by name).
    # (Read back as UTC wall-clock times, whatever the zone this test runs in.)
    over_time = spark.read.parquet(str(out / "tables" / "leader_changes_over_time"))
    over_time = over_time.withColumn("bucket_start", F.col("bucket_start").cast("timestamp_ntz"))
    over_time_rows = [r.asDict() for r in over_time.collect()]
    assert over_time_rows == [
        {"bucket_start": at("10:00:10"), "topic": "orders", "moves": 2},  # M1, M2
        {"bucket_start": at("10:01:10"), "topic": "payments", "moves": 1},  # M3
        {"bucket_start": at("10:02:10"), "topic": "orders", "moves": 1},  # M4
        {"bucket_start": at("10:03:20"), "topic": "orders", "moves": 1},  # M5
        {"bucket_start": at("10:05:00"), "topic": "legacy", "moves": 2},  # M6, M7
    ]
    plotted = [(r["bucket_start"], r["label"], r["moves"]) for r in a.rows("plot_moves_over_time")]
    assert plotted == [(r["bucket_start"], r["topic"], r["moves"]) for r in over_time_rows]
    assert a.rows("leadership_by_broker_over_time") == [
        {"bucket_start": at("10:00:10"), "broker": 1, "gained": 0, "lost": 2},
        {"bucket_start": at("10:00:10"), "broker": 2, "gained": 1, "lost": 0},
        {"bucket_start": at("10:00:10"), "broker": 3, "gained": 1, "lost": 0},
        {"bucket_start": at("10:01:10"), "broker": 1, "gained": 1, "lost": 0},
        {"bucket_start": at("10:01:10"), "broker": 2, "gained": 0, "lost": 1},
        {"bucket_start": at("10:02:10"), "broker": 2, "gained": 1, "lost": 0},
        {"bucket_start": at("10:03:20"), "broker": 1, "gained": 1, "lost": 0},
        {"bucket_start": at("10:03:20"), "broker": 3, "gained": 0, "lost": 1},
        {"bucket_start": at("10:05:00"), "broker": 1, "gained": 0, "lost": 2},
        {"bucket_start": at("10:05:00"), "broker": 2, "gained": 2, "lost": 0},
    ]


# -- redirects ---------------------------------------------------------------------------------


def test_redirects_by_api_and_route(hand: Hand) -> None:
    a = hand[0]
    # Fetch: R3 leader only, R4 no leader, R6 fast path; Produce: R1, R2, R5 fast path.
    assert approx_rows(a.rows("redirects_by_api")) == [
        {
            "api": "Fetch",
            "redirects": 3,
            "fast_path": 1,
            "leader_only": 1,
            "no_leader": 1,
            "endpoint_share": 1 / 3,
        },
        {
            "api": "Produce",
            "redirects": 3,
            "fast_path": 3,
            "leader_only": 0,
            "no_leader": 0,
            "endpoint_share": 1.0,
        },
    ]
    # 1->2: R1 (endpoint), R3; then by from node, bootstrap (null) first:
    # bootstrap->1: R5; 1->3: R2; 2->none: R4; 3->1: R6.
    assert a.rows("redirects_by_route") == [
        {"from_node": 1, "to_node": 2, "redirects": 2, "with_endpoint": 1},
        {"from_node": None, "to_node": 1, "redirects": 1, "with_endpoint": 1},
        {"from_node": 1, "to_node": 3, "redirects": 1, "with_endpoint": 1},
        {"from_node": 2, "to_node": None, "redirects": 1, "with_endpoint": 0},
        {"from_node": 3, "to_node": 1, "redirects": 1, "with_endpoint": 1},
    ]


# -- recoveries --------------------------------------------------------------------------------


def stats(n: int, p50: float, p90: float, p99: float, mx: float, mean: float) -> dict[str, Any]:
    values = {"recoveries": n, "p50": p50, "p90": p90, "p99": p99, "max": mx, "mean": mean}
    return {k: pytest.approx(v) for k, v in values.items()}


def test_recovery_percentiles(hand: Hand) -> None:
    rows = hand[0].rows("recovery_percentiles")
    got = {
        (r["scope"], r["key"]): {k: v for k, v in r.items() if k not in ("scope", "key")}
        for r in rows
    }
    assert got == {
        # all: 2, 4, 6, 10, 20, 100. p50 at rank 2.5: 6 + 0.5 * 4 = 8; p90 at 4.5:
        # 20 + 0.5 * 80 = 60; p99 at 4.95: 20 + 0.95 * 80 = 96; mean 142 / 6.
        ("all", "all"): stats(6, 8.0, 60.0, 96.0, 100.0, 142 / 6),
        # with NodeEndpoints (V1, V2, V5, V6): 2, 4, 6, 20. p50 at 1.5: 5; p90 at 2.7:
        # 6 + 0.7 * 14 = 15.8; p99 at 2.97: 6 + 0.97 * 14 = 19.58; mean 32 / 4.
        ("path", "with_endpoint"): stats(4, 5.0, 15.8, 19.58, 20.0, 8.0),
        # without (V3, V4): 10, 100. p50 55; p90 10 + 0.9 * 90 = 91; p99 99.1.
        ("path", "without_endpoint"): stats(2, 55.0, 91.0, 99.1, 100.0, 55.0),
        # per client: c1 2, 4 (p90 2 + 0.9 * 2); c2 10, 100; no client id 20; <c3> 6.
        ("client", "c1"): stats(2, 3.0, 3.8, 3.98, 4.0, 3.0),
        ("client", "c2"): stats(2, 55.0, 91.0, 99.1, 100.0, 55.0),
        ("client", None): stats(1, 20.0, 20.0, 20.0, 20.0, 20.0),
        ("client", "<c3>"): stats(1, 6.0, 6.0, 6.0, 6.0, 6.0),
    }
    # The report's order: overall and per-path rows, then clients by most recoveries.
    assert [(r["scope"], r["key"]) for r in rows] == [
        ("all", "all"),
        ("path", "with_endpoint"),
        ("path", "without_endpoint"),
        ("client", "c1"),
        ("client", "c2"),
        ("client", None),
        ("client", "<c3>"),
    ]
    # The distribution curve ends at each path's min and max.
    curve = hand[0].rows("recovery_curve")
    ends = {(r["path"], r["percentile"]): r["ms"] for r in curve if r["percentile"] in (0, 1)}
    assert ends == {
        ("with_endpoint", 0.0): 2.0,
        ("with_endpoint", 1.0): 20.0,
        ("without_endpoint", 0.0): 10.0,
        ("without_endpoint", 1.0): 100.0,
    }
    assert len(curve) == 2 * 101


# -- request latency --------------------------------------------------------------------------


def test_latency_by_api(hand: Hand) -> None:
    # Produce total 1..5 (A's four and B's one): p50 at rank 2: 3; p90 at 3.6: 4.6; p99 at
    # 3.96: 4.96. Upstream 0.5..4.5 is the same less 0.5. Fetch 10, 20: 15, 19, 19.9.
    assert approx_rows(hand[0].rows("latency_by_api")) == [
        {
            "api": "Produce",
            "samples": 5,
            "total_p50": 3.0,
            "total_p90": 4.6,
            "total_p99": 4.96,
            "total_max": 5.0,
            "upstream_p50": 2.5,
            "upstream_p90": 4.1,
            "upstream_p99": 4.46,
            "upstream_max": 4.5,
        },
        {
            "api": "Fetch",
            "samples": 2,
            "total_p50": 15.0,
            "total_p90": 19.0,
            "total_p99": 19.9,
            "total_max": 20.0,
            "upstream_p50": 14.0,
            "upstream_p90": 18.0,
            "upstream_p99": 18.9,
            "upstream_max": 19.0,
        },
        {
            "api": "Metadata",
            "samples": 1,
            "total_p50": 5.0,
            "total_p90": 5.0,
            "total_p99": 5.0,
            "total_max": 5.0,
            "upstream_p50": 4.0,
            "upstream_p90": 4.0,
            "upstream_p99": 4.0,
            "upstream_max": 4.0,
        },
    ]


# -- who was affected -------------------------------------------------------------------------


def test_clients_and_topics(hand: Hand) -> None:
    a = hand[0]
    clients = [
        (
            r["client_id"],
            r["redirects"],
            r["fast_path"],
            r["leader_only"],
            r["no_leader"],
            r["recoveries"],
            r["recovery_p50"],
            r["recovery_max"],
            r["recovery_total_ms"],
        )
        for r in a.rows("clients")
    ]
    # Most redirects first, then most recoveries, then by id (no id first).
    assert clients == [
        ("c1", 2, 2, 0, 0, 2, 3.0, 4.0, 6.0),  # R1 R2, V1 V2
        ("c2", 2, 0, 1, 1, 2, 55.0, 100.0, 110.0),  # R3 R4, V3 V4
        (None, 1, 1, 0, 0, 1, 20.0, 20.0, 20.0),  # R5, V5
        ("<c3>", 1, 1, 0, 0, 1, 6.0, 6.0, 6.0),  # R6, V6
    ]
    # R4 and V4 name payments by id only: M3 showed id-pay with its name.
    # orders recoveries 2, 4, 6, 10: p99 at 2.97: 6 + 0.97 * 4 = 9.88.
    # payments 20, 100: p99 20 + 0.99 * 80 = 99.2.
    topics = [
        (
            r["topic"],
            r["leader_moves"],
            r["redirects"],
            r["recoveries"],
            r["recovery_p99"],
            r["recovery_max"],
        )
        for r in a.rows("topics")
    ]
    assert topics == [
        ("orders", 4, 4, 4, pytest.approx(9.88), 10.0),
        ("payments", 1, 2, 2, pytest.approx(99.2), 100.0),
        ("legacy", 2, 0, 0, None, None),
    ]


# -- what lands in DIR -------------------------------------------------------------------------


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
    assert f["recovery"]["all"] == stats(6, 8.0, 60.0, 96.0, 100.0, 142 / 6)
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
