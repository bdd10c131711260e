"""How the results pages and tables write a figure, a spread and a ratio, and a target's
verdict (shared by `bench.report` and `bench.targets`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def fmt_num(value: float | None) -> str:
    """A figure with about three significant digits (thousands separated)."""
    if value is None:
        return "-"
    a = abs(value)
    if a >= 1000:
        return f"{value:,.0f}"
    if a >= 100:
        return f"{value:.0f}"
    if a >= 10:
        return f"{value:.1f}"
    if a >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def fmt_summary(s: dict[str, Any] | None) -> str:
    """``median [min-max]`` (just the median for one value, ``-`` for none)."""
    if not s or not s.get("n"):
        return "-"
    if s["n"] == 1 or s["min"] == s["max"]:
        return fmt_num(s["median"])
    return f"{fmt_num(s['median'])} [{fmt_num(s['min'])}-{fmt_num(s['max'])}]"


def fmt_ratio(s: dict[str, Any] | None) -> str:
    if not s or not s.get("n"):
        return "-"
    if s["n"] == 1 or s["min"] == s["max"]:
        return f"{s['median']:.2f}"
    return f"{s['median']:.2f} [{s['min']:.2f}-{s['max']:.2f}]"


@dataclass
class Verdict:
    target: str
    measured: str
    status: str  # met | missed | not measured


def replace_marked_section(text: str, section: str, start: str, end: str, title: str) -> str:
    """``text`` (bench/RESULTS.md) with the section between the markers ``start`` and
    ``end`` replaced by ``section`` (which carries both), or ``section`` appended when
    there is none; what follows the section stays. A section written before it had an
    end marker ends at the next heading of the level of ``title``."""
    if start not in text:
        return text.rstrip("\n") + "\n\n" + section
    head, rest = text.split(start, 1)
    if end in rest:
        tail = rest.split(end, 1)[1].lstrip("\n")
    else:
        after_title = rest.find(title)
        following = rest.find("\n## ", after_title + 1 if after_title >= 0 else 0)
        tail = rest[following + 1 :] if following >= 0 else ""
    return head.rstrip("\n") + "\n\n" + section + ("\n" + tail if tail else "")
