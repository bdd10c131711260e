"""The live report of `kproxy analyze --follow`: report.html, rewritten as data comes.

Plain HTML from the tables' first rows (no Spark here); it refreshes itself in the
browser every 30 s and says how far the data reaches.
"""

from __future__ import annotations

from typing import Any

from kproxy.analytics.report import stats_columns
from kproxy.analytics.report_audit import audit_section
from kproxy.analytics.report_html import CSS, card, col, count, esc, ms_cell, node_or, stamp, table
from kproxy.analytics.report_switchover import switchover_section

__all__ = ["render_follow_report"]

Rows = list[dict[str, Any]]

# The redirect paths of `kproxy.analytics.tables.REDIRECT_PATHS` (not imported: this
# module stays free of PySpark).
_PATHS = ("fast_path", "leader_only", "no_leader")

_WINDOW = ("window", col("window_start", stamp), False)


def _section(title: str, body: str) -> str:
    return f"<h2>{esc(title)}</h2>{body}"


def render_follow_report(status: dict[str, Any], heads: dict[str, Rows]) -> str:
    n = col
    paths = [
        (p.replace("_", " "), n(p, count), True) for p in ("fast_path", "leader_only", "no_leader")
    ]
    cards = "".join(
        [
            card(status.get("data_up_to") or "-", "data up to"),
            card(count(status.get("events")), "events"),
            card(count(status.get("late")), "late events"),
            card(count(status.get("batches")), "batches"),
        ]
    )
    parts = [
        f'<p class="sub">following {esc(status.get("source"))}; updated '
        f"{esc(status.get('updated_at'))}; watermark {esc(status.get('watermark') or '-')}; "
        f"windows of {esc(status.get('window_seconds'))} s</p>",
        f'<div class="cards">{cards}</div>',
        _section(
            "Leader changes per window, by topic",
            table(
                [_WINDOW, ("topic", n("topic"), False), ("moves", n("moves", count), True)],
                heads.get("leader_changes_per_window", []),
            ),
        ),
        _section(
            "Leadership per window, by broker",
            table(
                [
                    _WINDOW,
                    ("broker", n("broker"), True),
                    ("gained", n("gained", count), True),
                    ("lost", n("lost", count), True),
                ],
                heads.get("leadership_by_broker_per_window", []),
            ),
        ),
        _section(
            "Redirects per window, by API",
            table(
                [
                    _WINDOW,
                    ("api", n("api"), False),
                    ("redirects", n("redirects", count), True),
                    *paths,
                ],
                heads.get("redirects_per_window", []),
            ),
        ),
        _section(
            "Redirects per window, by broker (new leader)",
            table(
                [
                    _WINDOW,
                    ("broker", n("broker", node_or("no leader")), True),
                    ("redirects", n("redirects", count), True),
                ],
                heads.get("redirects_by_broker_per_window", []),
            ),
        ),
        _section(
            "Redirects per window, by topic",
            table(
                [_WINDOW, ("topic", n("topic"), False), ("redirects", n("redirects", count), True)],
                heads.get("redirects_by_topic_per_window", []),
            ),
        ),
        _section(
            "Recovery time per window",
            table(stats_columns(_WINDOW), heads.get("recovery_per_window", [])),
        ),
        _section(
            "Clients most affected",
            table(
                [
                    ("client id", n("client_id", node_or("(none)")), False),
                    ("redirects", n("redirects", count), True),
                    ("recoveries", n("recoveries", count), True),
                    ("recovery p99", ms_cell("recovery_p99"), True),
                ],
                heads.get("clients", []),
            ),
        ),
        audit_section(lambda name: heads.get(name, []), lambda _name: None),
        switchover_section(lambda name: heads.get(name, []), lambda _name: None),
        _section(
            "Late events (older than the watermark when they arrived)",
            table(
                [_WINDOW, ("type", n("type"), False), ("events", n("events", count), True)],
                heads.get("late_events", []),
            ),
        ),
    ]
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        '<meta http-equiv="refresh" content="30">'
        f"<title>kproxy leadership, live</title><style>{CSS}</style></head><body>"
        "<h1>kproxy leadership, live</h1>" + "".join(parts) + "</body></html>"
    )
