"""The headline figures: one dict for summary.json, the report's header and stdout.

Everything here is derived from the collected tables of an `Analysis`, so the three
places can never disagree.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from kproxy.analytics.model import Analysis
from kproxy.observe.events import EVENT_TYPES

__all__ = ["figures", "fmt_ms", "summary_json", "summary_text"]

TOP = 5  # clients and topics named in the headline


def _iso(value: Any) -> str | None:
    if isinstance(value, datetime.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
        return aware.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return None


def _stats(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    keys = ("recoveries", "p50", "p90", "p99", "max", "mean")
    return {k: row.get(k) for k in keys}


def figures(a: Analysis) -> dict[str, Any]:
    """The headline numbers, JSON-ready."""
    q = a.quality
    counts = {t: 0 for t in EVENT_TYPES}
    counts.update({r["type"]: int(r["events"]) for r in a.rows("event_counts")})
    proxies = a.rows("proxies")
    firsts = [r["first_ts"] for r in proxies if r["first_ts"] is not None]
    lasts = [r["last_ts"] for r in proxies if r["last_ts"] is not None]

    brokers = a.rows("leadership_by_broker")
    moves = sum(int(r["gained"]) for r in brokers)  # every move makes exactly one leader

    by_api = a.rows("redirects_by_api")
    paths = {p: sum(int(r[p]) for r in by_api) for p in ("fast_path", "leader_only", "no_leader")}
    redirects = sum(int(r["redirects"]) for r in by_api)

    recovery = {r["scope"] + ":" + str(r["key"]): r for r in a.rows("recovery_percentiles")}
    latency = {
        r["api"]: {k: v for k, v in r.items() if k != "api"} for r in a.rows("latency_by_api")
    }
    return {
        "inputs": list(a.inputs),
        "lines": q.lines,
        "events": q.events,
        "rejected": {
            "total": q.rejected,
            "malformed": q.malformed,
            "unknown_type": q.unknown_type,
            "newer_schema": q.newer_schema,
            "unknown_types": list(q.unknown_types),
            "newest_schema": q.newest_schema,
        },
        "event_counts": counts,
        "proxies": a.total_rows("proxies"),
        "first_ts": _iso(min(firsts)) if firsts else None,
        "last_ts": _iso(max(lasts)) if lasts else None,
        "leader_changes": {
            "events": counts["leader_change"],
            "moves": moves,
            "topics": a.total_rows("leader_changes_by_topic"),
            "quorum_moves": a.total_rows("quorum_leader_changes"),
            "brokers": {
                str(r["broker"]): {"gained": int(r["gained"]), "lost": int(r["lost"])}
                for r in brokers
            },
        },
        "redirects": {
            "total": redirects,
            **paths,
            "with_leader": paths["fast_path"] + paths["leader_only"],
            "endpoint_share": paths["fast_path"] / redirects if redirects else None,
        },
        "recovery": {
            "all": _stats(recovery.get("all:all")),
            "with_endpoint": _stats(recovery.get("path:with_endpoint")),
            "without_endpoint": _stats(recovery.get("path:without_endpoint")),
        },
        "latency": latency,
        "most_affected": {
            "clients": [
                {"client_id": r["client_id"], "redirects": int(r["redirects"])}
                for r in a.rows("clients")[:TOP]
                if r["redirects"]
            ],
            "topics": [
                {"topic": r["topic"], "redirects": int(r["redirects"])}
                for r in a.rows("topics")[:TOP]
                if r["redirects"]
            ],
        },
    }


def summary_json(a: Analysis) -> str:
    return json.dumps(figures(a), indent=2, sort_keys=False) + "\n"


def fmt_ms(value: float | None) -> str:
    """Milliseconds, with as many decimals as a human reads at that size."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _when(iso: str) -> str:
    return iso[:19].replace("T", " ")


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def summary_text(a: Analysis, report_path: str) -> str:
    """A few lines for stdout."""
    f = figures(a)
    q = a.quality
    lines = []
    span = ""
    if f["first_ts"]:
        span = f", {_when(f['first_ts'])} to {_when(f['last_ts'])} UTC"
    lines.append(
        f"kproxy analyze: {q.events:,} events from {f['proxies']:,} "
        f"prox{'y' if f['proxies'] == 1 else 'ies'}{span}"
    )
    if q.rejected:
        unknown = f" ({', '.join(q.unknown_types)})" if q.unknown_types else ""
        newer = f" (up to {q.newest_schema})" if q.newest_schema is not None else ""
        lines.append(
            f"  rejected lines: {q.malformed:,} malformed, {q.unknown_type:,} of unknown "
            f"types{unknown}, {q.newer_schema:,} of a newer schema{newer}"
        )
    if q.lines == 0:
        lines.append("  the input holds no events: the report is empty")
    lc = f["leader_changes"]
    brokers = lc["brokers"]
    line = (
        f"  leader changes: {lc['moves']:,} moves ({lc['events']:,} events) "
        f"on {lc['topics']:,} topics"
    )
    if brokers:
        gained = max(brokers.items(), key=lambda kv: (kv[1]["gained"], kv[0]))
        lost = max(brokers.items(), key=lambda kv: (kv[1]["lost"], kv[0]))
        line += f"; most gained: broker {gained[0]} ({gained[1]['gained']:,})"
        if lost[1]["lost"]:
            line += f", most lost: broker {lost[0]} ({lost[1]['lost']:,})"
    if lc["quorum_moves"]:
        line += f"; KRaft quorum: {lc['quorum_moves']:,} leader moves"
    lines.append(line)
    r = f["redirects"]
    lines.append(
        f"  redirects: {r['total']:,}; with NodeEndpoints (KIP-951 fast path) "
        f"{r['fast_path']:,} ({_pct(r['fast_path'], r['total'])}), leader without endpoint "
        f"{r['leader_only']:,}, no leader (metadata refresh) {r['no_leader']:,}"
    )
    rec = f["recovery"]
    if rec["all"] is not None:
        s = rec["all"]
        lines.append(
            f"  recovery: {s['recoveries']:,} episodes; p50 {fmt_ms(s['p50'])} ms, "
            f"p90 {fmt_ms(s['p90'])} ms, p99 {fmt_ms(s['p99'])} ms, max {fmt_ms(s['max'])} ms"
        )
        parts = []
        for key, label in (
            ("with_endpoint", "with NodeEndpoints"),
            ("without_endpoint", "without"),
        ):
            p = rec[key]
            if p is not None:
                parts.append(
                    f"{label}: {p['recoveries']:,}, p50 {fmt_ms(p['p50'])} ms, "
                    f"p99 {fmt_ms(p['p99'])} ms"
                )
        lines.append("    " + "; ".join(parts))
    else:
        lines.append("  recovery: no episodes")
    if f["latency"]:
        shown = [
            f"{api} {fmt_ms(v['total_p99'])} / {fmt_ms(v['upstream_p99'])}"
            for api, v in list(f["latency"].items())[:4]
        ]
        lines.append("  latency p99 ms (total / upstream): " + ", ".join(shown))
    top = f["most_affected"]
    if top["clients"] or top["topics"]:
        bits = []
        if top["clients"]:
            c = top["clients"][0]
            bits.append(f"client {c['client_id'] or '(none)'} ({c['redirects']:,} redirects)")
        if top["topics"]:
            t = top["topics"][0]
            bits.append(f"topic {t['topic']} ({t['redirects']:,} redirects)")
        lines.append("  most affected: " + ", ".join(bits))
    lines.append(f"report: {report_path}")
    return "\n".join(lines) + "\n"
