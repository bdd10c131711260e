"""The audit section of both reports (`kproxy analyze`, batch and `--follow`), from the
first rows of `kproxy.analytics.audit_tables`' tables. Plain HTML, no Spark."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kproxy.analytics.report_html import col, count, stamp, table

Rows = list[dict[str, Any]]


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def audit_section(rows: Callable[[str], Rows], total: Callable[[str], int | None]) -> str:
    """`rows(name)`: a table's first rows; `total(name)`: its row count, if known."""
    last = ("last", col("last", stamp), False)
    parts = ["<h2>Audit trail</h2>", "<h3>Changes by principal and resource</h3>"]
    parts.append(
        table(
            [
                ("principal", col("principal", _text), False),
                ("resource", col("resource"), False),
                ("api", col("api"), False),
                ("changes", col("changes", count), True),
                ("not success", col("failed", count), True),
                last,
            ],
            rows("changes_by_principal"),
            total("changes_by_principal"),
        )
    )
    parts.append("<h3>Refusals by principal</h3>")
    parts.append(
        table(
            [
                ("principal", col("principal", _text), False),
                ("listener", col("listener"), False),
                ("api", col("api"), False),
                ("refusals", col("refusals", count), True),
                last,
            ],
            rows("refusals_by_principal"),
            total("refusals_by_principal"),
        )
    )
    parts.append("<h3>Failed authentications by client address</h3>")
    parts.append(
        table(
            [
                ("client address", col("client_address", _text), False),
                ("mechanism", col("mechanism", _text), False),
                ("failures", col("failures", count), True),
                ("names claimed", col("names_claimed", count), True),
                last,
            ],
            rows("failed_authentications"),
            total("failed_authentications"),
        )
    )
    parts.append("<h3>By tenant</h3>")
    parts.append(
        table(
            [
                ("tenant", col("tenant", _text), False),
                ("changes", col("changes", count), True),
                ("not success", col("failed", count), True),
                ("refusals", col("refusals", count), True),
                last,
            ],
            rows("audit_by_tenant"),
            total("audit_by_tenant"),
        )
    )
    return "".join(parts)
