"""Collecting a small table into Python: rows as dicts, timestamps in UTC."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

__all__ = ["collect_rows"]


def _collectable(df: DataFrame) -> DataFrame:
    """`df` with its timestamps as UTC wall-clock times.

    PySpark turns a collected TIMESTAMP into a naive datetime in the Python process's
    local time zone; the report shows UTC (as the event log), whatever zone the machine
    running the job is in. TIMESTAMP_NTZ comes back as the wall clock of the session
    time zone, which is UTC (`session.build_session`).
    """
    return df.select(
        *(
            F.col(f.name).cast(T.TimestampNTZType()).alias(f.name)
            if isinstance(f.dataType, T.TimestampType)
            else F.col(f.name)
            for f in df.schema.fields
        )
    )


def collect_rows(df: DataFrame) -> list[dict[str, Any]]:
    """`df` collected as dicts, timestamps in UTC (`_collectable`)."""
    return [r.asDict(recursive=True) for r in _collectable(df).collect()]
