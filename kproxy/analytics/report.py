"""report.html: one self-contained page (inline CSS, no scripts) next to its PNG plots.

Every value from the event log (client ids, topic names, file names) is HTML-escaped:
a client chooses its own client.id, and the report must not run what it says.
"""

from __future__ import annotations

from typing import Any

from kproxy.analytics.model import Analysis
from kproxy.analytics.report_audit import audit_section
from kproxy.analytics.report_html import (
    CSS,
    Cell,
    card,
    col,
    count,
    esc,
    ms_cell,
    node_or,
    plot,
    share,
    stamp,
    table,
)
from kproxy.analytics.report_switchover import switchover_section
from kproxy.analytics.summary import figures, fmt_ms

__all__ = ["render_report"]


def _header(a: Analysis, f: dict[str, Any]) -> str:
    rec = f["recovery"]["all"]
    r = f["redirects"]
    span = "-"
    if f["first_ts"]:
        span = f"{f['first_ts'][:19].replace('T', ' ')} → {f['last_ts'][:19].replace('T', ' ')}"
    cards = [
        card(f"{f['events']:,}", "events read"),
        card(f"{f['proxies']:,}", "proxies"),
        card(f"{f['leader_changes']['moves']:,}", "leader moves"),
        card(f"{r['total']:,}", "redirects"),
        card(share(r["endpoint_share"]), "redirects with NodeEndpoints"),
        card(fmt_ms(rec["p50"]) if rec else "-", "recovery p50 (ms)"),
        card(fmt_ms(rec["p99"]) if rec else "-", "recovery p99 (ms)"),
    ]
    inputs = ", ".join(f"<code>{esc(i)}</code>" for i in a.inputs)
    return (
        "<h1>kproxy leadership report</h1>"
        f'<p class="sub">{esc(span)} UTC · inputs: {inputs}</p>'
        f'<div class="cards">{"".join(cards)}</div>'
    )


def _input_section(a: Analysis, f: dict[str, Any]) -> str:
    q = a.quality
    rows = [
        {"what": "non-blank lines read", "n": q.lines},
        {"what": "events (known types, schema 1)", "n": q.events},
        {"what": "malformed lines (skipped)", "n": q.malformed},
        {
            "what": "lines of unknown types (skipped)"
            + (f": {', '.join(q.unknown_types)}" if q.unknown_types else ""),
            "n": q.unknown_type,
        },
        {
            "what": "lines of a newer schema (skipped)"
            + (f": up to {q.newest_schema}" if q.newest_schema is not None else ""),
            "n": q.newer_schema,
        },
    ]
    parts = ["<h2>Input</h2>"]
    if q.lines == 0:
        parts.append('<p class="empty">The input holds no events: every section is empty.</p>')
    parts.append(table([("", col("what"), False), ("lines", col("n", count), True)], rows))
    if q.examples:
        parts.append("<h3>First rejected line of each kind</h3><ul>")
        for kind, text in sorted(q.examples.items()):
            parts.append(
                f'<li><span class="warn">{esc(kind)}</span>: <code>{esc(text)}</code></li>'
            )
        parts.append("</ul>")
    counts = [{"type": t, "n": n} for t, n in f["event_counts"].items()]
    parts.append("<h3>Events by type</h3>")
    parts.append(table([("type", col("type"), False), ("events", col("n", count), True)], counts))
    parts.append("<h3>Proxies</h3>")
    parts.append(
        table(
            [
                ("proxy", col("proxy"), False),
                ("events", col("events", count), True),
                ("first event", col("first_ts", stamp), False),
                ("last event", col("last_ts", stamp), False),
            ],
            a.rows("proxies"),
            a.total_rows("proxies"),
        )
    )
    return "".join(parts)


def _leader_section(a: Analysis, f: dict[str, Any]) -> str:
    lc = f["leader_changes"]
    parts = [
        "<h2>Leader changes</h2>",
        f"<p>{lc['moves']:,} distinct leader moves on {lc['topics']:,} topics, from "
        f"{lc['events']:,} <code>leader_change</code> events (a move seen by several "
        "proxies of a fleet is one move).</p>",
    ]
    if not lc["events"]:
        parts.append('<p class="empty">No leader changes in the input.</p>')
        return "".join(parts)
    parts.append(plot(a, "leader_moves_over_time", "leader moves over time by topic"))
    parts.append(plot(a, "leadership_by_broker", "leadership gained and lost per broker"))
    parts.append("<h3>Per broker</h3>")
    parts.append(
        table(
            [
                ("broker", col("broker"), True),
                ("gained", col("gained", count), True),
                ("lost", col("lost", count), True),
                ("net", col("net", count), True),
            ],
            a.rows("leadership_by_broker"),
            a.total_rows("leadership_by_broker"),
        )
    )
    parts.append("<h3>Per topic</h3>")
    parts.append(
        table(
            [
                ("topic", col("topic"), False),
                ("moves", col("moves", count), True),
                ("events", col("events", count), True),
                ("partitions", col("partitions", count), True),
            ],
            a.rows("leader_changes_by_topic"),
            a.total_rows("leader_changes_by_topic"),
        )
    )
    if lc["quorum_moves"]:
        parts.append(_quorum_table(a, lc["quorum_moves"]))
    return "".join(parts)


def _quorum_table(a: Analysis, moves: int) -> str:
    """The KRaft quorum's leader moves (kproxy carrying the controllers, KIP-853)."""
    return (
        "<h3>KRaft controller quorum</h3>"
        f"<p>{moves:,} leader moves of the controller quorum (<code>__cluster_metadata</code>"
        "), apart from the partitions' above.</p>"
        + table(
            [
                ("seen", col("ts", stamp), False),
                ("old leader", col("old_leader"), True),
                ("new leader", col("new_leader"), True),
                ("old epoch", col("old_epoch"), True),
                ("new epoch", col("new_epoch"), True),
                ("first seen in", col("source_api"), False),
                ("proxies", col("proxies", count), True),
            ],
            a.rows("quorum_leader_changes"),
            a.total_rows("quorum_leader_changes"),
        )
    )


def _redirect_section(a: Analysis, f: dict[str, Any]) -> str:
    r = f["redirects"]
    parts = ["<h2>Redirects</h2>"]
    if not r["total"]:
        parts.append('<p class="empty">No redirects in the input.</p>')
        return "".join(parts)
    parts.append(
        f"<p>{r['total']:,} partition results with NOT_LEADER_OR_FOLLOWER or "
        f"FENCED_LEADER_EPOCH: <b>{r['fast_path']:,} ({share(r['endpoint_share'])})</b> named "
        "the new leader with its endpoint (NodeEndpoints, the KIP-951 fast path), "
        f"{r['leader_only']:,} named the leader without an endpoint, and "
        f"{r['no_leader']:,} named none, so the client had to refresh its metadata.</p>"
    )
    parts.append(plot(a, "redirects_by_api", "redirects by API"))
    parts.append(
        table(
            [
                ("API", col("api"), False),
                ("redirects", col("redirects", count), True),
                ("with endpoint", col("fast_path", count), True),
                ("leader, no endpoint", col("leader_only", count), True),
                ("no leader", col("no_leader", count), True),
                ("endpoint share", col("endpoint_share", share), True),
            ],
            a.rows("redirects_by_api"),
            a.total_rows("redirects_by_api"),
        )
    )
    parts.append("<h3>From node to node</h3>")
    parts.append(plot(a, "redirects_by_route", "redirects from node to node"))
    parts.append(
        table(
            [
                ("from", col("from_node", node_or("bootstrap")), False),
                ("to", col("to_node", node_or("none")), False),
                ("redirects", col("redirects", count), True),
                ("with endpoint", col("with_endpoint", count), True),
            ],
            a.rows("redirects_by_route"),
            a.total_rows("redirects_by_route"),
        )
    )
    return "".join(parts)


def stats_columns(first: tuple[str, Cell, bool]) -> list[tuple[str, Cell, bool]]:
    return [
        first,
        ("recoveries", col("recoveries", count), True),
        ("p50 ms", ms_cell("p50"), True),
        ("p90 ms", ms_cell("p90"), True),
        ("p99 ms", ms_cell("p99"), True),
        ("max ms", ms_cell("max"), True),
        ("mean ms", ms_cell("mean"), True),
    ]


def _recovery_section(a: Analysis, f: dict[str, Any]) -> str:
    parts = [
        "<h2>Recovery after leadership moved</h2>",
        "<p>From a client's first NOT_LEADER/FENCED error on a partition to its first "
        "success there. Percentiles are exact (linear interpolation between ranks, as "
        "numpy.percentile).</p>",
    ]
    rows = a.rows("recovery_percentiles")
    if not rows:
        parts.append('<p class="empty">No recoveries in the input.</p>')
        return "".join(parts)
    parts.append(plot(a, "recovery", "recovery time by path"))
    labels = {"all": "all", "with_endpoint": "with NodeEndpoints", "without_endpoint": "without"}
    head = [r for r in rows if r["scope"] in ("all", "path")]
    parts.append(
        table(stats_columns(("path", lambda r: labels.get(r["key"], r["key"]), False)), head)
    )
    per_client = [r for r in rows if r["scope"] == "client"]
    # The table holds every client; the rows collected are the head of it.
    clients_total = a.total_rows("recovery_percentiles") - len(head)
    parts.append("<h3>Per client id (most recoveries first)</h3>")
    client_id: Cell = lambda r: r["key"] if r["key"] is not None else "(none)"  # noqa: E731
    parts.append(table(stats_columns(("client id", client_id, False)), per_client, clients_total))
    return "".join(parts)


def _latency_section(a: Analysis) -> str:
    parts = ["<h2>Request latency</h2>"]
    rows = a.rows("latency_by_api")
    if not rows:
        parts.append('<p class="empty">No request samples in the input.</p>')
        return "".join(parts)
    parts.append(
        "<p>From <code>request_sample</code> events (a random sample of requests). Total: "
        "kproxy read the request → wrote the response; upstream: the part spent waiting "
        "for the broker.</p>"
    )
    parts.append(plot(a, "latency", "latency percentiles per API"))
    parts.append(
        table(
            [
                ("API", col("api"), False),
                ("samples", col("samples", count), True),
                *(
                    (f"total {p} ms", ms_cell(f"total_{p}"), True)
                    for p in ("p50", "p90", "p99", "max")
                ),
                *(
                    (f"upstream {p} ms", ms_cell(f"upstream_{p}"), True)
                    for p in ("p50", "p90", "p99", "max")
                ),
            ],
            rows,
            a.total_rows("latency_by_api"),
        )
    )
    return "".join(parts)


def _affected_section(a: Analysis) -> str:
    parts = ["<h2>Most affected clients and topics</h2>"]
    clients = a.rows("clients")
    topics = a.rows("topics")
    if not clients and not topics:
        parts.append('<p class="empty">No redirects, recoveries or leader moves.</p>')
        return "".join(parts)
    parts.append(plot(a, "most_affected", "clients and topics with the most redirects"))
    parts.append("<h3>Clients</h3>")
    parts.append(
        table(
            [
                (
                    "client id",
                    lambda r: r["client_id"] if r["client_id"] is not None else "(none)",
                    False,
                ),
                ("redirects", col("redirects", count), True),
                ("with endpoint", col("fast_path", count), True),
                ("no leader", col("no_leader", count), True),
                ("recoveries", col("recoveries", count), True),
                ("recovery p50 ms", ms_cell("recovery_p50"), True),
                ("recovery p99 ms", ms_cell("recovery_p99"), True),
                ("recovery max ms", ms_cell("recovery_max"), True),
            ],
            clients,
            a.total_rows("clients"),
        )
    )
    parts.append("<h3>Topics</h3>")
    parts.append(
        table(
            [
                ("topic", col("topic"), False),
                ("leader moves", col("leader_moves", count), True),
                ("redirects", col("redirects", count), True),
                ("recoveries", col("recoveries", count), True),
                ("recovery p99 ms", ms_cell("recovery_p99"), True),
                ("recovery max ms", ms_cell("recovery_max"), True),
            ],
            topics,
            a.total_rows("topics"),
        )
    )
    return "".join(parts)


def _connections_section(a: Analysis) -> str:
    rows = a.rows("connections")
    parts = ["<h2>Client connections</h2>"]
    parts.append(
        table(
            [
                ("action", col("action"), False),
                ("listener", col("listener"), False),
                ("cause", col("cause", lambda v: "" if v is None else str(v)), False),
                ("connections", col("connections", count), True),
            ],
            rows,
            a.total_rows("connections"),
        )
    )
    return "".join(parts)


def _tables_section(a: Analysis) -> str:
    names = ["events", *(n for n in a.tables if not n.startswith("plot_"))]
    items = "".join(f"<li><code>{esc(n)}</code></li>" for n in dict.fromkeys(names))
    return (
        "<h2>Parquet tables</h2><p>Every table in full, next to this page: "
        "<code>events/</code> (every event, partitioned by <code>type</code>) and "
        f"<code>tables/&lt;name&gt;/</code>:</p><ul>{items}</ul>"
    )


def render_report(a: Analysis) -> str:
    f = figures(a)
    body = "".join(
        [
            _header(a, f),
            _input_section(a, f),
            _leader_section(a, f),
            _redirect_section(a, f),
            _recovery_section(a, f),
            _latency_section(a),
            _affected_section(a),
            _connections_section(a),
            audit_section(a.rows, a.total_rows),
            switchover_section(a.rows, a.total_rows),
            _tables_section(a),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>kproxy leadership report</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
