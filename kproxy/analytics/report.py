"""report.html: one self-contained page (inline CSS, no scripts) next to its PNG plots.

Every value from the event log (client ids, topic names, file names) is HTML-escaped:
a client chooses its own client.id, and the report must not run what it says.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Callable, Sequence
from typing import Any

from kproxy.analytics.model import Analysis
from kproxy.analytics.summary import figures, fmt_ms

__all__ = ["render_report"]

SHOWN_ROWS = 20  # rows of a table shown in the page (the Parquet tables hold them all)

CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif;
       margin: 0; background: #fafafa; color: #212121; font-size: 15px; line-height: 1.45; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 24px 64px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 8px; padding-bottom: 4px; border-bottom: 2px solid #e0e0e0; }
h3 { font-size: 16px; margin: 20px 0 6px; }
.sub { color: #616161; margin: 0 0 16px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 16px 0; }
.card { background: white; border: 1px solid #e0e0e0; border-radius: 6px; padding: 10px 14px;
        min-width: 150px; }
.card .v { font-size: 22px; font-weight: 600; }
.card .k { color: #616161; font-size: 13px; }
img { display: block; width: 100%; max-width: 1100px; background: white;
      border: 1px solid #e0e0e0; border-radius: 4px; margin: 8px 0 12px; }
table { border-collapse: collapse; background: white; margin: 8px 0 12px; font-size: 14px; }
th, td { border: 1px solid #e0e0e0; padding: 4px 10px; text-align: left; }
th { background: #f5f5f5; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr:nth-child(even) td { background: #fcfcfc; }
.empty { color: #757575; font-style: italic; }
.warn { color: #b71c1c; }
code { background: #f5f5f5; padding: 1px 4px; border-radius: 3px; font-size: 13px;
       word-break: break-all; }
"""

Cell = Callable[[dict[str, Any]], Any]


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _int(value: Any) -> str:
    return f"{int(value):,}" if value is not None else "-"


def _share(value: Any) -> str:
    return f"{100 * float(value):.1f}%" if value is not None else "-"


def _ts(value: Any) -> str:
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return "-" if value is None else str(value)


def _table(
    columns: Sequence[tuple[str, Cell, bool]], rows: list[dict[str, Any]], total: int | None = None
) -> str:
    """columns: (header, cell function, numeric?)."""
    if not rows:
        return '<p class="empty">none</p>'
    head = "".join(f"<th>{_e(h)}</th>" for h, _, _ in columns)
    body = []
    for r in rows[:SHOWN_ROWS]:
        cells = "".join(
            f'<td class="n">{_e(f(r))}</td>' if numeric else f"<td>{_e(f(r))}</td>"
            for _, f, numeric in columns
        )
        body.append(f"<tr>{cells}</tr>")
    more = ""
    total = total if total is not None else len(rows)
    if total > min(len(rows), SHOWN_ROWS):
        more = f'<p class="sub">first {min(len(rows), SHOWN_ROWS):,} of {total:,} rows</p>'
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def _plot(a: Analysis, name: str, alt: str) -> str:
    path = a.plots.get(name)
    if path is None:
        return ""
    return f'<img src="{_e(path)}" alt="{_e(alt)}">'


def _card(value: str, key: str) -> str:
    return f'<div class="card"><div class="v">{_e(value)}</div><div class="k">{_e(key)}</div></div>'


def _ms(key: str) -> Cell:
    return lambda r: fmt_ms(r.get(key))


def _col(key: str, fmt: Callable[[Any], str] = str) -> Cell:
    return lambda r: fmt(r.get(key))


def _node(none: str) -> Callable[[Any], str]:
    return lambda v: none if v is None else str(v)


def _header(a: Analysis, f: dict[str, Any]) -> str:
    rec = f["recovery"]["all"]
    r = f["redirects"]
    span = "-"
    if f["first_ts"]:
        span = f"{f['first_ts'][:19].replace('T', ' ')} → {f['last_ts'][:19].replace('T', ' ')}"
    cards = [
        _card(f"{f['events']:,}", "events read"),
        _card(f"{f['proxies']:,}", "proxies"),
        _card(f"{f['leader_changes']['moves']:,}", "leader moves"),
        _card(f"{r['total']:,}", "redirects"),
        _card(_share(r["endpoint_share"]), "redirects with NodeEndpoints"),
        _card(fmt_ms(rec["p50"]) if rec else "-", "recovery p50 (ms)"),
        _card(fmt_ms(rec["p99"]) if rec else "-", "recovery p99 (ms)"),
    ]
    inputs = ", ".join(f"<code>{_e(i)}</code>" for i in a.inputs)
    return (
        "<h1>kproxy leadership report</h1>"
        f'<p class="sub">{_e(span)} UTC · inputs: {inputs}</p>'
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
    parts.append(_table([("", _col("what"), False), ("lines", _col("n", _int), True)], rows))
    if q.examples:
        parts.append("<h3>First rejected line of each kind</h3><ul>")
        for kind, text in sorted(q.examples.items()):
            parts.append(f'<li><span class="warn">{_e(kind)}</span>: <code>{_e(text)}</code></li>')
        parts.append("</ul>")
    counts = [{"type": t, "n": n} for t, n in f["event_counts"].items()]
    parts.append("<h3>Events by type</h3>")
    parts.append(_table([("type", _col("type"), False), ("events", _col("n", _int), True)], counts))
    parts.append("<h3>Proxies</h3>")
    parts.append(
        _table(
            [
                ("proxy", _col("proxy"), False),
                ("events", _col("events", _int), True),
                ("first event", _col("first_ts", _ts), False),
                ("last event", _col("last_ts", _ts), False),
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
    parts.append(_plot(a, "leader_moves_over_time", "leader moves over time by topic"))
    parts.append(_plot(a, "leadership_by_broker", "leadership gained and lost per broker"))
    parts.append("<h3>Per broker</h3>")
    parts.append(
        _table(
            [
                ("broker", _col("broker"), True),
                ("gained", _col("gained", _int), True),
                ("lost", _col("lost", _int), True),
                ("net", _col("net", _int), True),
            ],
            a.rows("leadership_by_broker"),
            a.total_rows("leadership_by_broker"),
        )
    )
    parts.append("<h3>Per topic</h3>")
    parts.append(
        _table(
            [
                ("topic", _col("topic"), False),
                ("moves", _col("moves", _int), True),
                ("events", _col("events", _int), True),
                ("partitions", _col("partitions", _int), True),
            ],
            a.rows("leader_changes_by_topic"),
            a.total_rows("leader_changes_by_topic"),
        )
    )
    return "".join(parts)


def _redirect_section(a: Analysis, f: dict[str, Any]) -> str:
    r = f["redirects"]
    parts = ["<h2>Redirects</h2>"]
    if not r["total"]:
        parts.append('<p class="empty">No redirects in the input.</p>')
        return "".join(parts)
    parts.append(
        f"<p>{r['total']:,} partition results with NOT_LEADER_OR_FOLLOWER or "
        f"FENCED_LEADER_EPOCH: <b>{r['fast_path']:,} ({_share(r['endpoint_share'])})</b> named "
        "the new leader with its endpoint (NodeEndpoints, the KIP-951 fast path), "
        f"{r['leader_only']:,} named the leader without an endpoint, and "
        f"{r['no_leader']:,} named none, so the client had to refresh its metadata.</p>"
    )
    parts.append(_plot(a, "redirects_by_api", "redirects by API"))
    parts.append(
        _table(
            [
                ("API", _col("api"), False),
                ("redirects", _col("redirects", _int), True),
                ("with endpoint", _col("fast_path", _int), True),
                ("leader, no endpoint", _col("leader_only", _int), True),
                ("no leader", _col("no_leader", _int), True),
                ("endpoint share", _col("endpoint_share", _share), True),
            ],
            a.rows("redirects_by_api"),
            a.total_rows("redirects_by_api"),
        )
    )
    parts.append("<h3>From node to node</h3>")
    parts.append(_plot(a, "redirects_by_route", "redirects from node to node"))
    parts.append(
        _table(
            [
                ("from", _col("from_node", _node("bootstrap")), False),
                ("to", _col("to_node", _node("none")), False),
                ("redirects", _col("redirects", _int), True),
                ("with endpoint", _col("with_endpoint", _int), True),
            ],
            a.rows("redirects_by_route"),
            a.total_rows("redirects_by_route"),
        )
    )
    return "".join(parts)


def _stats_columns(first: tuple[str, Cell, bool]) -> list[tuple[str, Cell, bool]]:
    return [
        first,
        ("recoveries", _col("recoveries", _int), True),
        ("p50 ms", _ms("p50"), True),
        ("p90 ms", _ms("p90"), True),
        ("p99 ms", _ms("p99"), True),
        ("max ms", _ms("max"), True),
        ("mean ms", _ms("mean"), True),
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
    parts.append(_plot(a, "recovery", "recovery time by path"))
    labels = {"all": "all", "with_endpoint": "with NodeEndpoints", "without_endpoint": "without"}
    head = [r for r in rows if r["scope"] in ("all", "path")]
    parts.append(
        _table(_stats_columns(("path", lambda r: labels.get(r["key"], r["key"]), False)), head)
    )
    per_client = [r for r in rows if r["scope"] == "client"]
    # The table holds every client; the rows collected are the head of it.
    clients_total = a.total_rows("recovery_percentiles") - len(head)
    parts.append("<h3>Per client id (most recoveries first)</h3>")
    client_id: Cell = lambda r: r["key"] if r["key"] is not None else "(none)"  # noqa: E731
    parts.append(_table(_stats_columns(("client id", client_id, False)), per_client, clients_total))
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
    parts.append(_plot(a, "latency", "latency percentiles per API"))
    parts.append(
        _table(
            [
                ("API", _col("api"), False),
                ("samples", _col("samples", _int), True),
                *((f"total {p} ms", _ms(f"total_{p}"), True) for p in ("p50", "p90", "p99", "max")),
                *(
                    (f"upstream {p} ms", _ms(f"upstream_{p}"), True)
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
    parts.append(_plot(a, "most_affected", "clients and topics with the most redirects"))
    parts.append("<h3>Clients</h3>")
    parts.append(
        _table(
            [
                (
                    "client id",
                    lambda r: r["client_id"] if r["client_id"] is not None else "(none)",
                    False,
                ),
                ("redirects", _col("redirects", _int), True),
                ("with endpoint", _col("fast_path", _int), True),
                ("no leader", _col("no_leader", _int), True),
                ("recoveries", _col("recoveries", _int), True),
                ("recovery p50 ms", _ms("recovery_p50"), True),
                ("recovery p99 ms", _ms("recovery_p99"), True),
                ("recovery max ms", _ms("recovery_max"), True),
            ],
            clients,
            a.total_rows("clients"),
        )
    )
    parts.append("<h3>Topics</h3>")
    parts.append(
        _table(
            [
                ("topic", _col("topic"), False),
                ("leader moves", _col("leader_moves", _int), True),
                ("redirects", _col("redirects", _int), True),
                ("recoveries", _col("recoveries", _int), True),
                ("recovery p99 ms", _ms("recovery_p99"), True),
                ("recovery max ms", _ms("recovery_max"), True),
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
        _table(
            [
                ("action", _col("action"), False),
                ("listener", _col("listener"), False),
                ("cause", _col("cause", lambda v: "" if v is None else str(v)), False),
                ("connections", _col("connections", _int), True),
            ],
            rows,
            a.total_rows("connections"),
        )
    )
    return "".join(parts)


def _tables_section(a: Analysis) -> str:
    names = ["events", *(n for n in a.tables if not n.startswith("plot_"))]
    items = "".join(f"<li><code>{_e(n)}</code></li>" for n in dict.fromkeys(names))
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
            _tables_section(a),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>kproxy leadership report</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
