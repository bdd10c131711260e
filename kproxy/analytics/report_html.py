"""The building blocks of report.html: its stylesheet, cells, tables and cards.

Every value is HTML-escaped here: a client chooses its own client.id, and the report
must not run what it says.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Callable, Sequence
from typing import Any

from kproxy.analytics.model import Analysis
from kproxy.analytics.summary import fmt_ms

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


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def count(value: Any) -> str:
    return f"{int(value):,}" if value is not None else "-"


def share(value: Any) -> str:
    return f"{100 * float(value):.1f}%" if value is not None else "-"


def stamp(value: Any) -> str:
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return "-" if value is None else str(value)


def table(
    columns: Sequence[tuple[str, Cell, bool]], rows: list[dict[str, Any]], total: int | None = None
) -> str:
    """columns: (header, cell function, numeric?)."""
    if not rows:
        return '<p class="empty">none</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h, _, _ in columns)
    body = []
    for r in rows[:SHOWN_ROWS]:
        cells = "".join(
            f'<td class="n">{esc(f(r))}</td>' if numeric else f"<td>{esc(f(r))}</td>"
            for _, f, numeric in columns
        )
        body.append(f"<tr>{cells}</tr>")
    more = ""
    total = total if total is not None else len(rows)
    if total > min(len(rows), SHOWN_ROWS):
        more = f'<p class="sub">first {min(len(rows), SHOWN_ROWS):,} of {total:,} rows</p>'
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{more}"


def plot(a: Analysis, name: str, alt: str) -> str:
    path = a.plots.get(name)
    if path is None:
        return ""
    return f'<img src="{esc(path)}" alt="{esc(alt)}">'


def card(value: str, key: str) -> str:
    return (
        f'<div class="card"><div class="v">{esc(value)}</div><div class="k">{esc(key)}</div></div>'
    )


def ms_cell(key: str) -> Cell:
    return lambda r: fmt_ms(r.get(key))


def col(key: str, fmt: Callable[[Any], str] = str) -> Cell:
    return lambda r: fmt(r.get(key))


def node_or(none: str) -> Callable[[Any], str]:
    return lambda v: none if v is None else str(v)
