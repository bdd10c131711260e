"""The cluster switchovers' table (`switchover` events, docs/operations.md "Cluster
switchover"): one row per switchover that completed or was refused, newest first."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = ["switchovers"]


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
            "reason",
            "detail",
        )
        .orderBy(F.col("ts").desc())
    )
