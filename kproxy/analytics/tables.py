"""The report's aggregations: each takes DataFrames of events and returns one table.

Percentiles are exact: Spark's `percentile` aggregate (not `percentile_approx`), which
sorts each group's values and interpolates linearly between the two nearest ranks,
like `numpy.percentile`'s default: for sorted values v[0..n-1], p lies at rank
(n - 1) * p. So a test (or a reader with a calculator) gets the same figures by hand,
and a p99 over 40 recoveries is not a sketch's guess. Its cost is memory per group
for the distinct values (a map value -> count), which latencies written with three
decimals keep bounded; bench/ANALYTICS_RESULTS.md measures it at 20 million events.

Leader changes are counted twice over: `events` (lines, one per proxy that saw the move:
what `kproxy_leader_changes_total` counts on each proxy) and `moves` (distinct moves
across a fleet, keyed by topic, partition, new epoch and new leader). A move whose new
epoch is unknown (Metadata < v7) cannot be matched across proxies and counts once per
line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kproxy.protocol.apis import METADATA_TOPIC

__all__ = [
    "PERCENTILES",
    "REDIRECT_PATHS",
    "bucket_seconds",
    "connections",
    "event_counts",
    "latency_by_api",
    "leader_changes_by_topic",
    "leader_changes_over_time",
    "leader_moves",
    "leadership_by_broker",
    "leadership_by_broker_over_time",
    "of_type",
    "partition_moves",
    "proxies",
    "quorum_leader_changes",
    "recovery_curve",
    "recovery_percentiles",
    "recovery_stats",
    "redirects_by_api",
    "redirects_by_route",
    "topic_names",
    "with_topic_names",
]

PERCENTILES: Final = (0.5, 0.9, 0.99)
PERCENTILE_NAMES: Final = ("p50", "p90", "p99")

# A redirect's path, by what the response told the client:
#   fast_path   the new leader and its endpoint (NodeEndpoints, KIP-951): no refresh;
#   leader_only the new leader's id without its endpoint;
#   no_leader   nothing: the client must refresh its metadata.
REDIRECT_PATHS: Final = ("fast_path", "leader_only", "no_leader")
WITH_ENDPOINT: Final = "with_endpoint"
WITHOUT_ENDPOINT: Final = "without_endpoint"

# Time buckets for the plots over time: the smallest "round" width that keeps a span in
# at most MAX_BUCKETS bars.
MAX_BUCKETS: Final = 60
_NICE_SECONDS: Final = (
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
    86400, 172800, 604800,
)  # fmt: skip


def bucket_seconds(span_seconds: float) -> int:
    """Bucket width for a time span: 1 s for short runs, up to a week for long ones."""
    for step in _NICE_SECONDS:
        if span_seconds / step <= MAX_BUCKETS:
            return step
    weeks = int(span_seconds // (MAX_BUCKETS * 604800)) + 1
    return weeks * 604800


def _bucket(ts: Column, step: int) -> Column:
    seconds = F.unix_seconds(ts)
    return F.timestamp_seconds(seconds - F.pmod(seconds, F.lit(step)))


def percentiles(values: Column, prefix: str = "") -> list[Column]:
    # One aggregate: Spark computes identical expressions once, then indexes the array.
    arr = F.percentile(values, list(PERCENTILES))
    return [arr[i].alias(prefix + name) for i, name in enumerate(PERCENTILE_NAMES)]


def of_type(events: DataFrame, event_type: str) -> DataFrame:
    return events.filter(F.col("type") == event_type)


# -- input overview -------------------------------------------------------------------


def event_counts(events: DataFrame) -> DataFrame:
    return events.groupBy("type").agg(F.count(F.lit(1)).alias("events")).orderBy("type")


def proxies(events: DataFrame) -> DataFrame:
    return (
        events.groupBy("proxy")
        .agg(
            F.count(F.lit(1)).alias("events"),
            F.min("ts").alias("first_ts"),
            F.max("ts").alias("last_ts"),
        )
        .orderBy(F.desc("events"), "proxy")
    )


def connections(conns: DataFrame) -> DataFrame:
    kind = F.when(F.col("listener") == "bootstrap", "bootstrap").otherwise("node")
    return (
        conns.groupBy("action", kind.alias("listener"), "cause")
        .agg(F.count(F.lit(1)).alias("connections"))
        .orderBy("action", F.desc("connections"), "listener", "cause")
    )


# -- topics named by id only ----------------------------------------------------------------


def topic_names(events: DataFrame) -> DataFrame:
    """topic_id -> topic, from any event that carried both (Metadata v10+ shows both)."""
    return (
        events.filter(F.col("topic").isNotNull() & F.col("topic_id").isNotNull())
        .groupBy("topic_id")
        .agg(F.max("topic").alias("topic_name"))
    )


def with_topic_names(df: DataFrame, names: DataFrame) -> DataFrame:
    """`topic` filled in from the id where the line had none (Fetch v13+ and the like);
    an id never seen with a name stays as the id's text, so it is still told apart."""
    joined = df.join(F.broadcast(names), on="topic_id", how="left")
    return joined.withColumn(
        "topic", F.coalesce(F.col("topic"), F.col("topic_name"), F.col("topic_id"))
    ).drop("topic_name")


# -- leader changes ---------------------------------------------------------------------


def leader_moves(changes: DataFrame) -> DataFrame:
    """Distinct moves: one row per (topic, partition, new epoch, new leader).

    Of the proxies that saw a move, the one with the newest old epoch knew the leader
    just before it (another may have missed a move in between): its old_leader is the
    broker that lost leadership.
    """
    topic_key = F.coalesce(F.col("topic"), F.col("topic_id"))
    keyed = changes.withColumn("topic_key", topic_key)
    matched = (
        keyed.filter(F.col("new_epoch").isNotNull())
        .groupBy("topic_key", "partition", "new_epoch", "new_leader")
        .agg(
            F.min("ts").alias("ts"),
            F.max("topic").alias("topic"),
            F.max("topic_id").alias("topic_id"),
            F.coalesce(F.max_by("old_leader", "old_epoch"), F.min("old_leader")).alias(
                "old_leader"
            ),
            F.max("old_epoch").alias("old_epoch"),
            F.min_by("source_api", "ts").alias("source_api"),
            F.count(F.lit(1)).alias("events"),
            F.count_distinct("proxy").alias("proxies"),
        )
    )
    unmatched = keyed.filter(F.col("new_epoch").isNull()).select(
        "topic_key",
        "partition",
        "new_epoch",
        "new_leader",
        "ts",
        "topic",
        "topic_id",
        "old_leader",
        "old_epoch",
        "source_api",
        F.lit(1).cast("long").alias("events"),
        F.lit(1).cast("long").alias("proxies"),
    )
    return matched.unionByName(unmatched).drop("topic_key")


def partition_moves(moves: DataFrame) -> DataFrame:
    """The moves of partitions (brokers lead them), without the KRaft quorum's."""
    return moves.filter(F.col("topic").isNull() | (F.col("topic") != METADATA_TOPIC))


def quorum_leader_changes(moves: DataFrame) -> DataFrame:
    """The KRaft quorum's leader moves (controllers lead it: `__cluster_metadata`-0, as
    kproxy sees it when it carries the quorum, KIP-853), in time order."""
    return (
        moves.filter(F.col("topic") == METADATA_TOPIC)
        .select("ts", "old_leader", "new_leader", "old_epoch", "new_epoch", "source_api", "proxies")
        .orderBy("ts")
    )


def leader_changes_by_topic(moves: DataFrame) -> DataFrame:
    return (
        moves.groupBy("topic")
        .agg(
            F.count(F.lit(1)).alias("moves"),
            F.sum("events").alias("events"),
            F.count_distinct("partition").alias("partitions"),
        )
        .orderBy(F.desc("moves"), "topic")
    )


def _gained_lost(moves: DataFrame, *keys: Column) -> DataFrame:
    gained = moves.select(*keys, F.col("new_leader").alias("broker"), F.lit(1).alias("g"))
    gained = gained.withColumn("l", F.lit(0))
    lost = moves.filter(F.col("old_leader") != F.col("new_leader")).select(
        *keys, F.col("old_leader").alias("broker"), F.lit(0).alias("g"), F.lit(1).alias("l")
    )
    return gained.unionByName(lost)


def leadership_by_broker(moves: DataFrame) -> DataFrame:
    """Per broker: moves that made it leader (gained) and that took it away (lost).

    A move to a new epoch with the same leader (re-election in place) is gained by that
    broker but lost by none.
    """
    return (
        _gained_lost(moves)
        .groupBy("broker")
        .agg(F.sum("g").alias("gained"), F.sum("l").alias("lost"))
        .withColumn("net", F.col("gained") - F.col("lost"))
        .orderBy("broker")
    )


def leader_changes_over_time(moves: DataFrame, step: int) -> DataFrame:
    return (
        moves.groupBy(_bucket(F.col("ts"), step).alias("bucket_start"), "topic")
        .agg(F.count(F.lit(1)).alias("moves"))
        .orderBy("bucket_start", "topic")
    )


def leadership_by_broker_over_time(moves: DataFrame, step: int) -> DataFrame:
    bucket = _bucket(F.col("ts"), step).alias("bucket_start")
    return (
        _gained_lost(moves, bucket)
        .groupBy("bucket_start", "broker")
        .agg(F.sum("g").alias("gained"), F.sum("l").alias("lost"))
        .orderBy("bucket_start", "broker")
    )


# -- redirects --------------------------------------------------------------------------


def redirect_path() -> Column:
    return (
        F.when(F.col("to_node").isNull(), F.lit("no_leader"))
        .when(F.col("with_endpoint"), F.lit("fast_path"))
        .otherwise(F.lit("leader_only"))
    )


def _path_counts() -> list[Column]:
    path = redirect_path()
    return [F.count_if(path == name).alias(name) for name in REDIRECT_PATHS]


def redirects_by_api(redirects: DataFrame) -> DataFrame:
    return (
        redirects.groupBy("api")
        .agg(F.count(F.lit(1)).alias("redirects"), *_path_counts())
        .withColumn("endpoint_share", F.try_divide(F.col("fast_path"), F.col("redirects")))
        .orderBy(F.desc("redirects"), "api")
    )


def redirects_by_route(redirects: DataFrame) -> DataFrame:
    """From which broker to which: from_node null = kproxy's bootstrap listener,
    to_node null = the response named no leader."""
    return (
        redirects.groupBy("from_node", "to_node")
        .agg(
            F.count(F.lit(1)).alias("redirects"),
            F.count_if(F.col("with_endpoint")).alias("with_endpoint"),
        )
        .orderBy(F.desc("redirects"), "from_node", "to_node")
    )


# -- recoveries ---------------------------------------------------------------------------


def _recovery_path() -> Column:
    return F.when(F.col("with_endpoint"), F.lit(WITH_ENDPOINT)).otherwise(F.lit(WITHOUT_ENDPOINT))


def recovery_stats() -> list[Column]:
    """Count, exact p50/p90/p99, max and mean of `ms`: one group's recovery times."""
    return [
        F.count(F.lit(1)).alias("recoveries"),
        *percentiles(F.col("ms")),
        F.max("ms").alias("max"),
        F.avg("ms").alias("mean"),
    ]


def recovery_percentiles(recoveries: DataFrame) -> DataFrame:
    """scope `all` (key `all`), `path` (key with_endpoint / without_endpoint) and
    `client` (key the client id, null when the client sent none)."""
    overall = recoveries.agg(*recovery_stats()).select(
        F.lit("all").alias("scope"), F.lit("all").alias("key"), "*"
    )
    by_path = recoveries.groupBy(_recovery_path().alias("key")).agg(*recovery_stats())
    by_client = recoveries.groupBy(F.col("client_id").alias("key")).agg(*recovery_stats())
    by_path = by_path.select(F.lit("path").alias("scope"), "*")
    by_client = by_client.select(F.lit("client").alias("scope"), "*")
    return (
        overall.filter(F.col("recoveries") > 0)
        .unionByName(by_path)
        .unionByName(by_client)
        .orderBy("scope", F.desc("recoveries"), "key")
    )


def recovery_curve(recoveries: DataFrame, points: Sequence[float] | None = None) -> DataFrame:
    """Percentile curves per path (0th..100th by 1): the recovery-time distributions
    the report plots, exact like every other percentile here."""
    ps = list(points) if points is not None else [i / 100 for i in range(101)]
    curve = recoveries.groupBy(_recovery_path().alias("path")).agg(
        F.percentile(F.col("ms"), ps).alias("ms")
    )
    return (
        curve.select("path", F.posexplode("ms").alias("i", "ms"))
        .withColumn("percentile", F.element_at(F.array(*[F.lit(p) for p in ps]), F.col("i") + 1))
        .select("path", "percentile", "ms")
        .orderBy("path", "percentile")
    )


# -- request latency ------------------------------------------------------------------------


def latency_by_api(samples: DataFrame) -> DataFrame:
    return (
        samples.groupBy("api")
        .agg(
            F.count(F.lit(1)).alias("samples"),
            *percentiles(F.col("total_ms"), "total_"),
            F.max("total_ms").alias("total_max"),
            *percentiles(F.col("upstream_ms"), "upstream_"),
            F.max("upstream_ms").alias("upstream_max"),
        )
        .orderBy(F.desc("samples"), "api")
    )
