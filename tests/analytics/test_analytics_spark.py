"""`kproxy analyze` on the small hand-written event log, on real local Spark (docs/peers.md §4).

Every expected figure below is worked out by hand from the lines in the log (the
comments show the arithmetic), not computed by the code under test. Percentiles are
exact with linear interpolation: for n sorted values v[0..n-1], p lies at rank
(n - 1) * p, between v[floor] and v[ceil].

The log and its labels (moves M1-M7, redirects R1-R6, recoveries V1-V6) are described
in tests/hand_log.py.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("matplotlib")

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tests.hand_log import A, B, Hand, at

pytestmark = pytest.mark.slow


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


# -- the audit trail ---------------------------------------------------------------------------


def _audit(seconds: float, action: str, principal: str | None, **fields: Any) -> str:
    from tests.hand_log import ev

    base: dict[str, Any] = {
        "listener": "bootstrap",
        "client_address": "10.1.0.7",
        "client_id": "ops",
        "api": "CreateTopics",
        "api_version": 7,
        "resources": [],
        "outcome": "success",
        "failed": [],
        "error_codes": [],
        "mechanism": None,
        "reauthentication": None,
        "tenant": None,
    }
    return ev("audit", seconds, A, action=action, principal=principal, **{**base, **fields})


AUDIT_LINES = [
    _audit(1, "change", "User:alice", resources=["topic:orders", "topic:audit"]),
    _audit(
        2,
        "change",
        "User:alice",
        resources=["topic:orders"],
        outcome="failure",
        failed=["topic:orders"],
        error_codes=[36],
    ),
    _audit(3, "change", "User:bob", api="IncrementalAlterConfigs", resources=[], tenant="b"),
    _audit(4, "refuse", "User:eve", api="DeleteTopics", resources=["topic:orders"]),
    _audit(5, "refuse", "User:eve", api="DeleteTopics", resources=["topic:audit"], tenant="b"),
    _audit(
        6,
        "authenticate",
        "User:mallory",
        api="SaslAuthenticate",
        outcome="failure",
        mechanism="PLAIN",
        error_codes=[58],
    ),
    _audit(
        7,
        "authenticate",
        "User:root",
        api="SaslAuthenticate",
        outcome="failure",
        mechanism="PLAIN",
        error_codes=[58],
    ),
    _audit(8, "authenticate", "User:alice", api="SaslAuthenticate", mechanism="PLAIN"),
]


def test_the_audit_tables(spark: SparkSession) -> None:
    """Changes by principal and resource, refusals by principal, failed authentications
    by address: the functions the batch job and --follow both use, over parsed lines."""
    from kproxy.analytics.audit_tables import audit_tables
    from kproxy.analytics.inputs import OK, classify

    lines = spark.createDataFrame(
        [(line, "f") for line in AUDIT_LINES], "value string, file string"
    )
    events = classify(lines).filter(F.col("status") == OK)
    assert events.count() == len(AUDIT_LINES)
    tables = {name: table.drop("last").collect() for name, table in audit_tables(events).items()}
    assert [r.asDict() for r in tables["changes_by_principal"]] == [
        {
            "principal": "User:alice",
            "resource": "topic:orders",
            "api": "CreateTopics",
            "changes": 2,
            "failed": 1,
        },
        {
            "principal": "User:alice",
            "resource": "topic:audit",
            "api": "CreateTopics",
            "changes": 1,
            "failed": 0,
        },
        {
            "principal": "User:bob",
            "resource": "",
            "api": "IncrementalAlterConfigs",
            "changes": 1,
            "failed": 0,
        },
    ]
    assert [r.asDict() for r in tables["refusals_by_principal"]] == [
        {"principal": "User:eve", "listener": "bootstrap", "api": "DeleteTopics", "refusals": 2},
    ]
    assert [r.asDict() for r in tables["failed_authentications"]] == [
        {"client_address": "10.1.0.7", "mechanism": "PLAIN", "failures": 2, "names_claimed": 2},
    ]
    # Records of no tenant (tenant null) are not a tenant's.
    assert [r.asDict() for r in tables["audit_by_tenant"]] == [
        {"tenant": "b", "changes": 1, "failed": 0, "refusals": 1},
    ]


SWITCHOVER_LINES = [
    '{"schema":1,"type":"switchover","ts":"2026-12-06T10:00:00.000000Z","proxy":"p-1",'
    '"phase":"fenced","trigger":"admin","from_cluster":"blue","to_cluster":"green",'
    '"connections":8,"fence_ms":null,"ms":null,"drained":null,"cut":null,"reason":null,'
    '"detail":null}',
    '{"schema":1,"type":"switchover","ts":"2026-12-06T10:00:00.500000Z","proxy":"p-1",'
    '"phase":"completed","trigger":"admin","from_cluster":"blue","to_cluster":"green",'
    '"connections":null,"fence_ms":480.5,"ms":512.25,"drained":7,"cut":1,"reason":null,'
    '"detail":null,"transactions_aborted":2,"transactions_not_aborted":0}',
    '{"schema":1,"type":"switchover","ts":"2026-12-06T11:00:00.000000Z","proxy":"p-1",'
    '"phase":"refused","trigger":"reload","from_cluster":"green","to_cluster":"red",'
    '"connections":null,"fence_ms":null,"ms":null,"drained":null,"cut":null,'
    '"reason":"unknown","detail":"no cluster named \'red\' (clusters: blue, green)"}',
    '{"schema":1,"type":"switchover","ts":"2026-12-06T10:00:01.200000Z","proxy":"p-1",'
    '"phase":"resumed","trigger":"admin","from_cluster":"blue","to_cluster":"green",'
    '"connections":null,"fence_ms":null,"ms":1200.0,"drained":null,"cut":null,"reason":null,'
    '"detail":null,"client_id":"orders-writer","api":"Produce"}',
    '{"schema":1,"type":"switchover","ts":"2026-12-06T10:00:03.400000Z","proxy":"p-1",'
    '"phase":"resumed","trigger":"admin","from_cluster":"blue","to_cluster":"green",'
    '"connections":null,"fence_ms":null,"ms":3400.5,"drained":null,"cut":null,"reason":null,'
    '"detail":null,"client_id":"billing","api":"Fetch"}',
]


def test_the_switchover_tables_and_their_report_section(spark: SparkSession) -> None:
    """One row per switchover that completed or was refused, newest first (the fenced
    and resumed phases are not rows of their own); one per client resumed, slowest first."""
    from kproxy.analytics.inputs import OK, classify
    from kproxy.analytics.report_switchover import switchover_section
    from kproxy.analytics.switchover_tables import switchover_tables

    lines = spark.createDataFrame(
        [(line, "f") for line in SWITCHOVER_LINES], "value string, file string"
    )
    events = classify(lines).filter(F.col("status") == OK)
    assert events.count() == len(SWITCHOVER_LINES)
    tables = switchover_tables(events)
    rows = [r.asDict() for r in tables["switchovers"].drop("ts").collect()]
    assert rows == [
        {"proxy": "p-1", "trigger": "reload", "from_cluster": "green", "to_cluster": "red",
         "outcome": "refused", "fence_ms": None, "ms": None, "drained": None, "cut": None,
         "transactions_aborted": None, "reason": "unknown",
         "detail": "no cluster named 'red' (clusters: blue, green)"},
        {"proxy": "p-1", "trigger": "admin", "from_cluster": "blue", "to_cluster": "green",
         "outcome": "completed", "fence_ms": 480.5, "ms": 512.25, "drained": 7, "cut": 1,
         "transactions_aborted": 2, "reason": None, "detail": None},
    ]  # fmt: skip
    resumed = [r.asDict() for r in tables["switchover_resumptions"].drop("ts").collect()]
    assert resumed == [
        {"proxy": "p-1", "from_cluster": "blue", "to_cluster": "green", "client_id": "billing",
         "api": "Fetch", "ms": 3400.5},
        {"proxy": "p-1", "from_cluster": "blue", "to_cluster": "green",
         "client_id": "orders-writer", "api": "Produce", "ms": 1200.0},
    ]  # fmt: skip
    heads = {"switchovers": rows, "switchover_resumptions": resumed}
    html = switchover_section(lambda name: heads[name], lambda name: len(heads[name]))
    assert "<h2>Cluster switchovers</h2>" in html
    assert "480 ms" in html and "no cluster named &#x27;red&#x27;" in html
    assert "Clients back on the target" in html and "3,400 ms" in html and "billing" in html
    assert switchover_section(lambda _name: [], lambda _name: 0) == ""
