"""The cluster switchovers' tables (`switchover` events, docs/operations.md "Cluster
switchover"): one row per switchover that completed or was refused, newest first; and
one per client and data API, how long after the fence it first succeeded on the target."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = ["resumptions", "switchover_tables", "switchovers"]


def switchovers(events: DataFrame) -> DataFrame:
    """Each switchover's outcome: when, which proxy, from and to which cluster, what
    started it, how long its fence and the whole move took, the connections it closed
    between responses (drained) or at the fence's end (cut); a refusal's reason."""
    return (
        events.filter((F.col("type") == "switchover") & F.col("phase").isin("completed", "refused"))
        .select(
            "ts",
            "proxy",
            "trigger",
            "from_cluster",
            "to_cluster",
            F.col("phase").alias("outcome"),
            "fence_ms",
            "ms",
            "drained",
            "cut",
            "transactions_aborted",
            "reason",
            "detail",
        )
        .orderBy(F.col("ts").desc())
    )


def resumptions(events: DataFrame) -> DataFrame:
    """Per client and API (Produce, Fetch), the time from a switchover's fence to its
    first success on the target (the `resumed` phase), the slowest first."""
    return (
        events.filter((F.col("type") == "switchover") & (F.col("phase") == "resumed"))
        .select("ts", "proxy", "from_cluster", "to_cluster", "client_id", "api", "ms")
        .orderBy(F.col("ms").desc())
    )


def switchover_tables(events: DataFrame) -> dict[str, DataFrame]:
    """Both tables, by name, of the `switchover` events."""
    return {"switchovers": switchovers(events), "switchover_resumptions": resumptions(events)}
