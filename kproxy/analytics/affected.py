"""Who leader moves affected: the per-client and per-topic tables of `kproxy analyze`."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kproxy.analytics.tables import REDIRECT_PATHS, percentiles, redirect_path


def clients(redirects: DataFrame, recoveries: DataFrame) -> DataFrame:
    """Per client id: redirects by path and recovery times. One grouping over the union
    (no join, so the null client id is a group like any other)."""
    path = redirect_path()
    r = redirects.select(
        "client_id",
        F.lit(1).alias("redirect"),
        path.alias("path"),
        F.lit(None).cast("double").alias("ms"),
    )
    v = recoveries.select(
        "client_id",
        F.lit(0).alias("redirect"),
        F.lit(None).cast("string").alias("path"),
        F.col("ms"),
    )
    return (
        r.unionByName(v)
        .groupBy("client_id")
        .agg(
            F.sum("redirect").alias("redirects"),
            *(F.count_if(F.col("path") == name).alias(name) for name in REDIRECT_PATHS),
            F.count("ms").alias("recoveries"),
            *percentiles(F.col("ms"), "recovery_"),
            F.max("ms").alias("recovery_max"),
            F.sum("ms").alias("recovery_total_ms"),
        )
        .orderBy(F.desc("redirects"), F.desc("recoveries"), "client_id")
    )


def topics(moves: DataFrame, redirects: DataFrame, recoveries: DataFrame) -> DataFrame:
    """Per topic: distinct leader moves, redirects and recovery times."""

    def part(df: DataFrame, move: int, redirect: int, ms: Column) -> DataFrame:
        return df.select(
            "topic",
            F.lit(move).alias("move"),
            F.lit(redirect).alias("redirect"),
            ms.cast("double").alias("ms"),
        )

    no_ms = F.lit(None)
    rows = (
        part(moves, 1, 0, no_ms)
        .unionByName(part(redirects, 0, 1, no_ms))
        .unionByName(part(recoveries, 0, 0, F.col("ms")))
    )
    return (
        rows.groupBy("topic")
        .agg(
            F.sum("move").alias("leader_moves"),
            F.sum("redirect").alias("redirects"),
            F.count("ms").alias("recoveries"),
            *percentiles(F.col("ms"), "recovery_"),
            F.max("ms").alias("recovery_max"),
        )
        .orderBy(F.desc("redirects"), F.desc("leader_moves"), "topic")
    )
