"""What the job hands to the report: plain Python values, no Spark objects.

The report, the plots and the summary read only these, so they can be built and tested
without a SparkSession.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Analysis", "InputQuality", "Table"]


@dataclass(frozen=True)
class InputQuality:
    """What the reading pass counted. `lines` excludes blank lines."""

    lines: int = 0
    events: int = 0
    malformed: int = 0
    unknown_type: int = 0
    newer_schema: int = 0
    unknown_types: tuple[str, ...] = ()
    newest_schema: int | None = None
    # reject kind -> "file: line" (the smallest by that text, so runs are repeatable)
    examples: dict[str, str] = field(default_factory=dict)

    @property
    def rejected(self) -> int:
        return self.malformed + self.unknown_type + self.newer_schema


@dataclass
class Table:
    """A table's first rows (all of them for the small ones) and how many it has."""

    rows: list[dict[str, Any]]
    total_rows: int

    @property
    def truncated(self) -> bool:
        return self.total_rows > len(self.rows)


@dataclass
class Analysis:
    inputs: list[str]
    out: str
    quality: InputQuality
    bucket_seconds: int = 60
    tables: dict[str, Table] = field(default_factory=dict)
    # plot name -> file name relative to `out` (only the plots that had data)
    plots: dict[str, str] = field(default_factory=dict)

    def rows(self, name: str) -> list[dict[str, Any]]:
        table = self.tables.get(name)
        return table.rows if table is not None else []

    def total_rows(self, name: str) -> int:
        table = self.tables.get(name)
        return table.total_rows if table is not None else 0
