"""What `kproxy analyze --follow` keeps between triggers, exactly once.

Spark's checkpoint (OUT/_checkpoint by default) records which offsets (or files) each
micro-batch covers, before the batch runs; a batch that was running when the job died
runs again on restart with the same input. So each batch's results are written to a
directory of its own, `OUT/stream/batch=N/`, first under a hidden name and renamed
when whole: a batch run twice replaces its own directory and counts nothing twice.

Per batch:

* `leadership/`  its leader_change, redirect and recovery events that were on time
  (the tables of moves, redirects and recovery times are built from these: few rows,
  exact percentiles, moves de-duplicated across proxies and batches);
* `counts/`      events per event-time window, type and lateness (every event);
* `meta/`        one row: lines, events, rejects, the newest event time seen, and the
  watermark the batch was judged against.

The watermark is Spark's rule, kept here so that late events can be counted: the
newest event time of all earlier batches minus `--watermark-seconds`. An event older
than that is late: counted in `late_events` by type and window, kept out of the
windowed tables (whose windows may already have been reported), never silently lost.
Spark's own `withWatermark` would drop such rows from a stateful aggregation and only
count them in the query's progress.
"""

from __future__ import annotations

from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kproxy.analytics import inputs as inp
from kproxy.analytics.output import join
from kproxy.analytics.schema import event_columns, events_table_schema
from kproxy.analytics.session import hadoop_path
from kproxy.observe.events import format_ts

__all__ = ["KEPT_TYPES", "BatchStore", "ts_text"]

# The events kept whole between batches: the leadership's, the audit trail's and the
# cluster switchovers'.
KEPT_TYPES: Final = ("leader_change", "redirect", "recovery", "audit", "switchover")

META_SCHEMA: Final = T.StructType(
    [
        T.StructField("batch", T.LongType()),
        T.StructField("lines", T.LongType()),
        T.StructField("events", T.LongType()),
        T.StructField("late", T.LongType()),
        *(T.StructField(kind, T.LongType()) for kind in inp.REJECT_KINDS),
        T.StructField("max_ts_us", T.LongType()),  # newest event time, µs since the epoch
        T.StructField("watermark_us", T.LongType()),
    ]
)
COUNTS_SCHEMA: Final = T.StructType(
    [
        T.StructField("window_start", T.TimestampType()),
        T.StructField("type", T.StringType()),
        T.StructField("late", T.BooleanType()),
        T.StructField("events", T.LongType()),
    ]
)


class BatchStore:
    """Writes each micro-batch's share under OUT/stream and reads the whole back."""

    def __init__(self, spark: SparkSession, out: str, window_seconds: int, watermark: float):
        self.spark = spark
        self.root = join(out, "stream")
        self.window_seconds = window_seconds
        self.watermark_us = int(watermark * 1_000_000)

    # -- reading the state ----------------------------------------------------------------
    def _exists(self, path: str) -> bool:
        fs, p = hadoop_path(self.spark, path)
        return bool(fs.exists(p))

    def _part(self, name: str, schema: T.StructType) -> DataFrame:
        pattern = join(self.root, "batch=*", name)
        fs, p = hadoop_path(self.spark, pattern)
        found = fs.globStatus(p)
        if found is None or len(found) == 0:
            return self.spark.createDataFrame([], schema)
        # The directories themselves, not the glob: Spark would look for a streaming
        # sink's metadata under a glob path and warn that there is none.
        paths = [str(status.getPath().toString()) for status in found]
        return self.spark.read.schema(schema).parquet(*paths)

    def meta(self) -> DataFrame:
        return self._part("meta", META_SCHEMA)

    def counts(self) -> DataFrame:
        return self._part("counts", COUNTS_SCHEMA)

    def kept(self) -> DataFrame:
        return self._part("leadership", events_table_schema())

    def newest_before(self, batch_id: int) -> int | None:
        """The newest event time (µs) of the batches before `batch_id`."""
        row = self.meta().filter(F.col("batch") < batch_id).agg(F.max("max_ts_us")).first()
        return None if row is None or row[0] is None else int(row[0])

    # -- writing one batch ------------------------------------------------------------------
    def write_batch(self, lines: DataFrame, batch_id: int) -> dict[str, Any]:
        """Classify `lines` (columns value, file), judge lateness, write batch=N; the
        batch's meta row as a dict."""
        newest = self.newest_before(batch_id)
        watermark = None if newest is None else newest - self.watermark_us
        classified = inp.classify(lines).persist()
        try:
            ok = classified.filter(F.col("status") == inp.OK).select(
                "ts", "proxy", *event_columns(), "type"
            )
            ts_us = F.unix_micros(F.col("ts"))
            late = F.lit(False) if watermark is None else ts_us < F.lit(watermark)
            ok = ok.withColumn("late", late)
            status = F.col("status")
            row = classified.agg(
                F.count(F.lit(1)).alias("lines"),
                F.count_if(status == inp.OK).alias("events"),
                F.count_if((status == inp.OK) & late).alias("late"),
                *(F.count_if(status == kind).alias(kind) for kind in inp.REJECT_KINDS),
                F.max(F.when(status == inp.OK, ts_us)).alias("max_ts_us"),
            ).first()
            stats = row.asDict() if row is not None else {}
            meta = {
                "batch": batch_id,
                **{k: int(stats.get(k) or 0) for k in ("lines", "events", "late")},
                **{k: int(stats.get(k) or 0) for k in inp.REJECT_KINDS},
                "max_ts_us": stats.get("max_ts_us"),
                "watermark_us": watermark,
            }
            tmp = join(self.root, f"_tmp-batch={batch_id}")
            final = join(self.root, f"batch={batch_id}")
            self._delete(tmp)
            on_time = ok.filter(~F.col("late") & F.col("type").isin(*KEPT_TYPES))
            on_time.drop("late").coalesce(1).write.parquet(join(tmp, "leadership"))
            window = F.window("ts", f"{self.window_seconds} seconds").start
            counts = ok.groupBy(window.alias("window_start"), "type", "late").agg(
                F.count(F.lit(1)).alias("events")
            )
            counts.coalesce(1).write.parquet(join(tmp, "counts"))
            self.spark.createDataFrame([meta], META_SCHEMA).coalesce(1).write.parquet(
                join(tmp, "meta")
            )
            self._delete(final)  # a batch run again replaces its own results
            self._rename(tmp, final)
            return meta
        finally:
            classified.unpersist()

    def _delete(self, path: str) -> None:
        fs, p = hadoop_path(self.spark, path)
        if fs.exists(p):
            fs.delete(p, True)

    def _rename(self, src: str, dst: str) -> None:
        fs, s = hadoop_path(self.spark, src)
        _, d = hadoop_path(self.spark, dst)
        if not fs.rename(s, d):
            raise OSError(f"cannot rename {src} to {dst}")


def ts_text(us: int | None) -> str | None:
    """µs since the epoch as the event log writes a time (`kproxy.observe.events.format_ts`)."""
    return None if us is None else format_ts(us / 1e6)
