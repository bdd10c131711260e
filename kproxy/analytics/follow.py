"""`kproxy analyze --follow`: a Structured Streaming job that keeps the tables current.

    kproxy analyze --follow kafka://HOST:PORT/kproxy-events --out DIR [--master URL]
    kproxy analyze --follow DIR_OF_EVENT_FILES --out DIR

Each trigger (`--trigger-seconds`) reads what arrived since the last one (Spark's
Kafka source, or its file source for a directory: it takes each file once, when it
appears, so follow a directory that files are moved into when complete), and
`follow_state.BatchStore` writes that micro-batch's share exactly once. Every
`--report-every` triggers with data, and whenever the source has nothing more waiting,
`follow_tables` rebuilds DIR/tables/ and DIR/report.html and DIR/status.json are
rewritten with the current figures and the time the data reaches ("data up to").
SIGTERM or SIGINT stops the query between batches; a restart with the same DIR (and
checkpoint) continues where it stopped.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from kproxy.analytics import inputs as inp
from kproxy.analytics.arguments import kafka_options
from kproxy.analytics.follow_report import render_follow_report
from kproxy.analytics.follow_state import BatchStore, ts_text
from kproxy.analytics.follow_tables import build_tables
from kproxy.analytics.kafka_input import (
    is_kafka_input,
    kafka_source_options,
    packages_for,
    parse_kafka_input,
    record_lines,
)
from kproxy.analytics.output import join, replace_file, report_dir
from kproxy.analytics.session import build_session
from kproxy.observe.events import format_ts

__all__ = ["Follower", "run_follow", "stream_lines"]

EXIT_INPUT: Final = 2


def stream_lines(spark: SparkSession, source: str, kafka: dict[str, str]) -> DataFrame:
    """The streaming DataFrame of event lines (`value`, `file`) from a topic or a
    directory."""
    if is_kafka_input(source):
        topic = parse_kafka_input(source)
        opts = kafka_source_options(topic, kafka, streaming=True)
        records = spark.readStream.format("kafka").options(**opts).load()
        return record_lines(records.withColumn("bootstrap", F.lit(topic.bootstrap)))
    return inp.file_lines(spark.readStream.text(source))


class Follower:
    """The foreachBatch function: store each batch, refresh the report now and then."""

    def __init__(self, store: BatchStore, out: str, report_every: int, source: str) -> None:
        self.store = store
        self.out = out
        self.report_every = report_every
        self.source = source
        self.batches_with_data = 0
        self.unreported = False  # stored batches the tables do not show yet
        self.lock = threading.Lock()

    def __call__(self, lines: DataFrame, batch_id: int) -> None:
        with self.lock:
            meta = self.store.write_batch(lines, batch_id)
            if meta["lines"] == 0:
                return
            self.batches_with_data += 1
            print(
                f"kproxy analyze --follow: batch {batch_id}: {meta['events']:,} events "
                f"({meta['late']:,} late), data up to {ts_text(meta['max_ts_us'])}",
                file=sys.stderr,
                flush=True,
            )
            self.unreported = True
            if self.batches_with_data % self.report_every == 1 or self.report_every == 1:
                self.refresh()

    def caught_up(self, status: dict[str, Any]) -> None:
        """Between triggers: once the source has nothing waiting, the tables show every
        stored batch (the last batches of a backlog would otherwise wait for the next
        report, which only comes with more data)."""
        if self.unreported and not status.get("isDataAvailable", True):
            with self.lock:
                if self.unreported:
                    self.refresh()

    def refresh(self) -> dict[str, Any]:
        """Rebuild the tables, status.json and report.html from everything stored."""
        self.unreported = False
        began = time.monotonic()
        heads = build_tables(self.store, self.out)
        status = self.status()
        spark = self.store.spark
        with report_dir(spark, self.out) as local:
            # status.json last: once it shows a batch, the tables and the report do too.
            replace_file(local / "report.html", render_follow_report(status, heads))
            replace_file(
                local / "status.json",
                json.dumps({**status, "tables": heads}, default=str, indent=1),
            )
        # How long a rebuild takes tells an operator whether --report-every keeps up
        # with --trigger-seconds (a rebuild delays the next trigger).
        print(
            f"kproxy analyze --follow: tables rebuilt in {time.monotonic() - began:.1f} s "
            f"({status['batches']:,} batches, {status['events']:,} events, "
            f"data up to {status['data_up_to']})",
            file=sys.stderr,
            flush=True,
        )
        return status

    def status(self) -> dict[str, Any]:
        row = (
            self.store.meta()
            .agg(
                F.count(F.lit(1)).alias("batches"),
                *(F.sum(k).alias(k) for k in ("lines", "events", "late", *inp.REJECT_KINDS)),
                F.max("max_ts_us").alias("max_ts_us"),
            )
            .first()
        )
        m = row.asDict() if row is not None else {}
        newest = m.get("max_ts_us")
        watermark = None if newest is None else newest - self.store.watermark_us
        return {
            "source": self.source,
            "updated_at": format_ts(time.time()),
            "data_up_to": ts_text(newest),
            "watermark": ts_text(watermark),
            "window_seconds": self.store.window_seconds,
            "batches": int(m.get("batches") or 0),
            **{k: int(m.get(k) or 0) for k in ("lines", "events", "late", *inp.REJECT_KINDS)},
        }


def _stop_on_signals(query: StreamingQuery) -> None:
    def stop(signum: int, _frame: Any) -> None:
        print(f"kproxy analyze --follow: signal {signum}, stopping", file=sys.stderr, flush=True)
        threading.Thread(target=query.stop, daemon=True).start()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)


def run_follow(args: argparse.Namespace) -> int:
    """`args` as `kproxy.analytics.arguments` defines them, with --follow."""
    if len(args.inputs) != 1:
        print("kproxy analyze: --follow takes one input (a topic or a directory)", file=sys.stderr)
        return EXIT_INPUT
    source = str(args.inputs[0])
    kafka = kafka_options(args.kafka_option)
    out = str(args.out)
    checkpoint = args.checkpoint or join(out, "_checkpoint")
    spark = build_session(
        args.master, spark_ui=bool(args.spark_ui), packages=packages_for([source])
    )
    try:
        try:
            inp.check_inputs(spark, [source], kafka)
        except inp.InputError as exc:
            print(f"kproxy analyze: {exc}", file=sys.stderr)
            return EXIT_INPUT
        store = BatchStore(spark, out, args.window_seconds, args.watermark_seconds)
        follower = Follower(store, out, args.report_every, source)
        query = (
            stream_lines(spark, source, kafka)
            .writeStream.foreachBatch(follower)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime=f"{args.trigger_seconds} seconds")
            .queryName("kproxy-follow")
            .start()
        )
        _stop_on_signals(query)
        print(
            f"kproxy analyze --follow: following {source}; tables and report in {out}, "
            f"checkpoint {checkpoint}",
            file=sys.stderr,
            flush=True,
        )
        while not query.awaitTermination(args.trigger_seconds):
            follower.caught_up(query.status)
        if follower.unreported:
            # The last batches' figures, whatever the report cadence (a stop after the
            # tables caught up rebuilds nothing: that can take minutes on a busy machine).
            follower.refresh()
        return 0
    finally:
        spark.stop()
