"""A small hand-written kproxy event log and `kproxy analyze` of it on real local Spark.

The tests in tests/analytics/test_analytics_spark.py work out every figure of it by hand,
and the browser test (tests/integration/test_report_browser.py) renders its report.

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
from datetime import datetime
from pathlib import Path
from typing import Any

from kproxy.analytics import job
from kproxy.analytics.model import Analysis
from kproxy.analytics.session import build_session

A, B = "app-1-100", "app-2-200"  # the two proxies of the log


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
