"""The `kproxy analyze` Spark job; also a plain PySpark application:

    spark-submit [--master URL] kproxy/analytics/job.py INPUT... --out DIR
    python -m kproxy.analytics.job INPUT... --out DIR [--master URL] [--spark-ui]

Under spark-submit the master is spark-submit's (its `--master`, spark-defaults.conf);
run any other way it is `--master`, by default `local[*]`, as for `kproxy analyze`.

One pass reads the JSON lines (explicit schema, rejects counted by an Observation on
the same pass) and writes every event to `DIR/events/` (Parquet, partitioned by type).
The aggregations then read that columnar copy, each touching only the event types and
columns it needs, write `DIR/tables/<name>/` and collect their heads for report.html,
the plots, summary.json and the lines printed to stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:
    # Run as a file (spark-submit job.py): make `kproxy` importable from the checkout
    # this file lives in, and take this file's own directory off the path (Python put
    # it first: its `inputs`, `schema`, ... would shadow any top-level module of those
    # names). Executors never need kproxy: the job runs no Python UDFs.
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    sys.path.insert(0, str(_here.parents[1]))

import argparse
from typing import Any, TextIO

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kproxy.analytics import affected
from kproxy.analytics import inputs as inp
from kproxy.analytics import tables as tb
from kproxy.analytics.arguments import DEFAULT_MASTER, add_analyze_arguments, kafka_options
from kproxy.analytics.audit_tables import audit_tables
from kproxy.analytics.kafka_input import packages_for
from kproxy.analytics.model import Analysis, Table
from kproxy.analytics.output import join, report_dir
from kproxy.analytics.plots import render_plots
from kproxy.analytics.progress import Progress
from kproxy.analytics.report import render_report
from kproxy.analytics.rows import collect_rows
from kproxy.analytics.schema import event_columns, events_table_schema
from kproxy.analytics.session import build_session, under_spark_submit
from kproxy.analytics.summary import summary_json, summary_text
from kproxy.analytics.switchover_tables import switchover_tables

__all__ = ["EXIT_INPUT", "analyze", "build_parser", "main", "run", "run_args"]

EXIT_INPUT = 2  # an input that names nothing (as kproxy's other usage errors)

STEPS = (
    "reading events",
    "overview",
    "leader changes",
    "redirects",
    "recoveries",
    "request latency",
    "clients and topics",
    "report",
)

HEAD_ROWS = 50  # rows of a big table collected for the report (the Parquet has all)
PLOT_TOPICS = 8  # topics drawn by name in the leader-moves plot; the rest are "other"
ROUTE_ROWS = 400
OVER_TIME_ROWS = 20_000


class _Tables:
    """Writes each table to DIR/tables/<name>/ and keeps its head for the report."""

    def __init__(self, out: str, analysis: Analysis) -> None:
        self.out = out
        self.analysis = analysis

    def save(self, name: str, df: DataFrame, head: int | None = None) -> Table:
        # One partition: these tables are small, and one file reads in order.
        frame = df.coalesce(1).persist()
        try:
            frame.write.mode("overwrite").parquet(join(self.out, "tables", name))
            collected = frame.limit(head) if head is not None else frame
            rows = collect_rows(collected)
            total = frame.count() if head is not None else len(rows)
        finally:
            frame.unpersist()
        table = Table(rows, total)
        self.analysis.tables[name] = table
        return table

    def keep(self, name: str, df: DataFrame) -> Table:
        """Collected for a plot only, not written."""
        rows = collect_rows(df)
        table = Table(rows, len(rows))
        self.analysis.tables[name] = table
        return table


def _write_events(
    spark: SparkSession, inputs: list[str], out: str, kafka: dict[str, str]
) -> Analysis:
    lines = inp.read_lines(spark, inputs, kafka)
    classified, observation = inp.observe_quality(inp.classify(lines))
    events = classified.filter(F.col("status") == inp.OK).select(
        "ts", "proxy", *event_columns(), "type"
    )
    spark.sparkContext.setJobDescription("kproxy: read events, write DIR/events")
    events.write.mode("overwrite").partitionBy("type").parquet(join(out, "events"))
    quality = inp.quality_from(observation.get)
    return Analysis(inputs=list(inputs), out=out, quality=quality)


def analyze(
    spark: SparkSession,
    inputs: list[str],
    out: str,
    *,
    stream: TextIO | None = None,
    progress_interval: float = 0.5,
    kafka: dict[str, str] | None = None,
) -> Analysis:
    """Run the whole job on an existing session; returns what the report shows.
    `kafka`: options of Spark's Kafka source, for `kafka://` inputs."""
    kafka = kafka or {}
    inp.check_inputs(spark, inputs, kafka)
    progress = Progress(
        spark.sparkContext.statusTracker(),
        steps=len(STEPS),
        stream=stream,
        interval=progress_interval,
    )
    with progress:
        progress.step(STEPS[0])
        analysis = _write_events(spark, inputs, out, kafka)
        events = spark.read.schema(events_table_schema()).parquet(join(out, "events"))
        _aggregate(spark, events, analysis, progress)
        progress.step(STEPS[-1])
        with report_dir(spark, out) as local:
            analysis.plots = render_plots(analysis, local)
            (local / "report.html").write_text(render_report(analysis), encoding="utf-8")
            (local / "summary.json").write_text(summary_json(analysis), encoding="utf-8")
    return analysis


def _aggregate(
    spark: SparkSession, events: DataFrame, analysis: Analysis, progress: Progress
) -> None:
    out = analysis.out
    t = _Tables(out, analysis)
    sc = spark.sparkContext

    def begin(step: int) -> None:
        progress.step(STEPS[step])
        sc.setJobDescription(f"kproxy: {STEPS[step]}")  # named in the Spark UI and logs

    begin(1)
    t.save("event_counts", tb.event_counts(events))
    t.save("proxies", tb.proxies(events), head=HEAD_ROWS)
    t.save("connections", tb.connections(tb.of_type(events, "connection")), head=HEAD_ROWS)
    for name, table in audit_tables(tb.of_type(events, "audit")).items():
        t.save(name, table, head=HEAD_ROWS)
    for name, table in switchover_tables(tb.of_type(events, "switchover")).items():
        t.save(name, table, head=HEAD_ROWS)

    begin(2)
    named_types = events.filter(F.col("type").isin("leader_change", "redirect", "recovery"))
    names = tb.topic_names(named_types).persist()
    changes = tb.with_topic_names(tb.of_type(events, "leader_change"), names)
    all_moves = tb.leader_moves(changes)
    # The KRaft quorum's moves are controllers', told apart from the partitions'.
    t.save("quorum_leader_changes", tb.quorum_leader_changes(all_moves), HEAD_ROWS)
    moves = tb.partition_moves(all_moves).persist()
    try:
        by_topic = t.save("leader_changes_by_topic", tb.leader_changes_by_topic(moves), HEAD_ROWS)
        t.save("leadership_by_broker", tb.leadership_by_broker(moves))
        span = moves.agg(
            (F.unix_micros(F.max("ts")) - F.unix_micros(F.min("ts"))).alias("us")
        ).first()
        if span is not None and span["us"] is not None:
            analysis.bucket_seconds = tb.bucket_seconds(span["us"] / 1e6)
        step = analysis.bucket_seconds
        over_time = tb.leader_changes_over_time(moves, step).persist()
        try:
            t.save("leader_changes_over_time", over_time, 0)
            t.keep("plot_moves_over_time", _moves_by_label(over_time, by_topic))
        finally:
            over_time.unpersist()
        t.save(
            "leadership_by_broker_over_time",
            tb.leadership_by_broker_over_time(moves, step),
            OVER_TIME_ROWS,
        )

        begin(3)
        redirects = tb.with_topic_names(tb.of_type(events, "redirect"), names)
        t.save("redirects_by_api", tb.redirects_by_api(redirects))
        t.save("redirects_by_route", tb.redirects_by_route(redirects), ROUTE_ROWS)

        begin(4)
        recoveries = tb.with_topic_names(tb.of_type(events, "recovery"), names)
        _save_recovery_percentiles(t, tb.recovery_percentiles(recoveries))
        t.save("recovery_curve", tb.recovery_curve(recoveries))

        begin(5)
        t.save("latency_by_api", tb.latency_by_api(tb.of_type(events, "request_sample")))

        begin(6)
        t.save("clients", affected.clients(redirects, recoveries), HEAD_ROWS)
        t.save("topics", affected.topics(moves, redirects, recoveries), HEAD_ROWS)
    finally:
        moves.unpersist()
        names.unpersist()
        sc.setJobDescription(None)  # type: ignore[arg-type]


def _moves_by_label(over_time: DataFrame, by_topic: Table) -> DataFrame:
    """The over-time table with the topics past the busiest PLOT_TOPICS in one label."""
    top = [r["topic"] for r in by_topic.rows[:PLOT_TOPICS]]
    label = (
        F.when(F.col("topic").isin(*top), F.col("topic")).otherwise(F.lit("(other topics)"))
        if by_topic.total_rows > PLOT_TOPICS
        else F.col("topic")
    )
    return (
        over_time.groupBy("bucket_start", label.alias("label"))
        .agg(F.sum("moves").alias("moves"))
        .orderBy("bucket_start", "label")
    )


def _save_recovery_percentiles(t: _Tables, df: DataFrame) -> None:
    # All rows go to Parquet; the report gets the overall and per-path rows and the
    # clients with the most recoveries (there may be many clients).
    frame = df.persist()
    try:
        full = t.save("recovery_percentiles", frame, head=0)
        head = collect_rows(frame.filter(F.col("scope") != "client"))
        clients = collect_rows(frame.filter(F.col("scope") == "client").limit(HEAD_ROWS))
        t.analysis.tables["recovery_percentiles"] = Table(head + clients, full.total_rows)
    finally:
        frame.unpersist()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kproxy-analyze",
        description="Turn kproxy event logs into Parquet tables and a leadership report.",
    )
    add_analyze_arguments(p, default_master=None)
    return p


def run(
    inputs: list[str],
    out: str,
    master: str | None,
    spark_ui: bool,
    *,
    kafka: dict[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Start a session, analyze, print the summary, stop the session; the exit code."""
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    spark = build_session(master, spark_ui=spark_ui, packages=packages_for(inputs))
    try:
        try:
            analysis = analyze(spark, inputs, out, stream=stderr, kafka=kafka)
        except inp.InputError as exc:
            print(f"kproxy analyze: {exc}", file=stderr)
            return EXIT_INPUT
        except AnalysisException as exc:  # e.g. a path that vanished after the check
            print(f"kproxy analyze: {exc.getMessage()}", file=stderr)
            return EXIT_INPUT
        stdout.write(summary_text(analysis, join(out, "report.html")))
        stdout.flush()
        return 0
    finally:
        spark.stop()


def run_args(args: argparse.Namespace) -> int:
    """The batch job or, with --follow, the streaming one, as the parsed arguments
    (`kproxy.analytics.arguments`) say; the exit code."""
    if args.follow:
        from kproxy.analytics.follow import run_follow

        return run_follow(args)
    kafka = kafka_options(args.kafka_option)
    return run(list(args.inputs), args.out, args.master, bool(args.spark_ui), kafka=kafka)


def main(argv: list[str] | None = None) -> int:
    args: Any = build_parser().parse_args(argv)
    if args.master is None and not under_spark_submit():
        args.master = DEFAULT_MASTER
    return run_args(args)


if __name__ == "__main__":
    sys.exit(main())
