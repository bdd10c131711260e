"""The tables `kproxy analyze --follow` keeps current, from what `follow_state` stored.

Windowed tables (event-time windows of `--window-seconds`, tumbling, aligned to the
epoch like Spark's `window`): leader changes per window by topic and by broker,
redirects per window by API and path, by broker and by topic, recovery-time
percentiles per window, events per window by type, late events. Whole-run tables,
built by the batch job's own functions so that a caught-up stream gives the batch
figures exactly: leader changes by topic, leadership by broker, redirects by API and
by route, recovery percentiles, clients and topics most affected, events by type, and
the audit trail's (`kproxy.analytics.audit_tables`) and the cluster switchovers'.
"""

from __future__ import annotations

from typing import Any, Final

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kproxy.analytics import affected
from kproxy.analytics import tables as tb
from kproxy.analytics.audit_tables import audit_tables
from kproxy.analytics.follow_state import BatchStore
from kproxy.analytics.output import join
from kproxy.analytics.rows import collect_rows
from kproxy.analytics.switchover_tables import switchover_tables

__all__ = ["build_tables"]

HEAD_ROWS: Final = 200  # rows of each table kept for the live report and status.json


def _bucketed(df: DataFrame, seconds: int) -> DataFrame:
    window = F.window("ts", f"{seconds} seconds").start
    return df.withColumn("window_start", window)


def _windowed(store: BatchStore, events: DataFrame) -> dict[str, DataFrame]:
    w = store.window_seconds
    names = tb.topic_names(events).persist()
    changes = tb.with_topic_names(tb.of_type(events, "leader_change"), names)
    moves = _bucketed(tb.partition_moves(tb.leader_moves(changes)), w)
    redirects = _bucketed(tb.with_topic_names(tb.of_type(events, "redirect"), names), w)
    recoveries = _bucketed(tb.with_topic_names(tb.of_type(events, "recovery"), names), w)
    path = tb.redirect_path()
    counts = store.counts()
    desc_window = F.desc("window_start")
    return {
        "leader_changes_per_window": moves.groupBy("window_start", "topic")
        .agg(F.count(F.lit(1)).alias("moves"), F.sum("events").alias("events"))
        .orderBy(desc_window, "topic"),
        "leadership_by_broker_per_window": tb.leadership_by_broker_over_time(moves, w)
        .withColumnRenamed("bucket_start", "window_start")
        .orderBy(desc_window, "broker"),
        "redirects_per_window": redirects.groupBy("window_start", "api")
        .agg(
            F.count(F.lit(1)).alias("redirects"),
            *(F.count_if(path == p).alias(p) for p in tb.REDIRECT_PATHS),
        )
        .orderBy(desc_window, "api"),
        "redirects_by_broker_per_window": redirects.groupBy(
            "window_start", F.col("to_node").alias("broker")
        )
        .agg(F.count(F.lit(1)).alias("redirects"))
        .orderBy(desc_window, "broker"),
        "redirects_by_topic_per_window": redirects.groupBy("window_start", "topic")
        .agg(F.count(F.lit(1)).alias("redirects"))
        .orderBy(desc_window, F.desc("redirects"), "topic"),
        "recovery_per_window": recoveries.groupBy("window_start")
        .agg(*tb.recovery_stats())
        .orderBy(desc_window),
        "events_per_window": counts.filter(~F.col("late"))
        .groupBy("window_start", "type")
        .agg(F.sum("events").alias("events"))
        .orderBy(desc_window, "type"),
        "late_events": counts.filter(F.col("late"))
        .groupBy("window_start", "type")
        .agg(F.sum("events").alias("events"))
        .orderBy(desc_window, "type"),
        # Whole-run tables: the batch job's functions over the same events.
        "event_counts": counts.filter(~F.col("late"))
        .groupBy("type")
        .agg(F.sum("events").alias("events"))
        .orderBy("type"),
        "leader_changes_by_topic": tb.leader_changes_by_topic(moves),
        "leadership_by_broker": tb.leadership_by_broker(moves),
        "redirects_by_api": tb.redirects_by_api(redirects),
        "redirects_by_route": tb.redirects_by_route(redirects),
        "recovery_percentiles": tb.recovery_percentiles(recoveries),
        "clients": affected.clients(redirects, recoveries),
        "topics": affected.topics(moves, redirects, recoveries),
        **audit_tables(tb.of_type(events, "audit")),
        **switchover_tables(tb.of_type(events, "switchover")),
    }


def build_tables(store: BatchStore, out: str) -> dict[str, list[dict[str, Any]]]:
    """Write every table to OUT/tables/<name>/ (Parquet) and return their first rows."""
    spark = store.spark
    events = store.kept().persist()
    try:
        heads: dict[str, list[dict[str, Any]]] = {}
        for name, df in _windowed(store, events).items():
            frame = df.coalesce(1).persist()
            try:
                frame.write.mode("overwrite").parquet(join(out, "tables", name))
                heads[name] = collect_rows(frame.limit(HEAD_ROWS))
            finally:
                frame.unpersist()
        spark.catalog.clearCache()
        return heads
    finally:
        events.unpersist()
