"""The switchover section of both reports (`kproxy analyze`, batch and `--follow`), from
the first rows of `kproxy.analytics.switchover_tables`. Plain HTML, no Spark."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kproxy.analytics.report_html import col, count, stamp, table

Rows = list[dict[str, Any]]


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _ms(value: Any) -> str:
    return "" if value is None else f"{float(value):,.0f} ms"


def switchover_section(rows: Callable[[str], Rows], total: Callable[[str], int | None]) -> str:
    """`rows(name)`: a table's first rows; `total(name)`: its row count, if known."""
    found = rows("switchovers")
    if not found:
        return ""
    return "<h2>Cluster switchovers</h2>" + _moves(found, total) + _resumed(rows, total)


def _moves(found: Rows, total: Callable[[str], int | None]) -> str:
    return table(
        [
            ("when", col("ts", stamp), False),
            ("proxy", col("proxy"), False),
            ("trigger", col("trigger"), False),
            ("from", col("from_cluster"), False),
            ("to", col("to_cluster"), False),
            ("outcome", col("outcome"), False),
            ("fence", col("fence_ms", _ms), True),
            ("whole move", col("ms", _ms), True),
            ("drained", col("drained", count), True),
            ("cut", col("cut", count), True),
            ("transactions aborted", col("transactions_aborted", count), True),
            ("why refused", col("detail", _text), False),
        ],
        found,
        total("switchovers"),
    )


def _resumed(rows: Callable[[str], Rows], total: Callable[[str], int | None]) -> str:
    found = rows("switchover_resumptions")
    if not found:
        return ""
    return "<h3>Clients back on the target, the slowest first</h3>" + table(
        [
            ("resumed", col("ts", stamp), False),
            ("proxy", col("proxy"), False),
            ("to", col("to_cluster"), False),
            ("client id", col("client_id", _text), False),
            ("api", col("api"), False),
            ("after the fence began", col("ms", _ms), True),
        ],
        found,
        total("switchover_resumptions"),
    )
