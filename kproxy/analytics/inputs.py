"""Reading event logs: lines in, events and counted rejects out.

Inputs are anything Spark's Hadoop file systems read: files, directories (read
recursively, so a fleet's `host/events-*.jsonl` tree works as one input), globs, and
URIs (`file://`, `hdfs://`, `s3a://` with hadoop-aws on the classpath). Compressed
files (`.gz`, `.bz2`, ...) are decompressed by Spark on the way. `kafka://HOST:PORT/TOPIC`
reads an events topic instead (`kproxy.analytics.kafka_input`).

Each line is parsed once, with the explicit schema of `kproxy.analytics.schema` (no
inference pass), and sorted into one of:

* `ok`            an event of a known type, with every field the schema never nulls;
* `newer_schema`  `schema` greater than this reader's: skipped as docs/events.md says,
  whatever else the line holds (a newer schema may change fields' types);
* `malformed`     not JSON, not an object, a field of the wrong JSON type, no usable
  schema/type/ts/proxy, or a known type missing a field it always has;
* `unknown_type`  a well-formed schema-1 line of a type this reader does not know.

Blank lines are not events and are not counted. The counts come from a Spark
`Observation` on the same pass that writes the events, so rejects cost no second read.
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Final

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from kproxy.analytics.kafka_input import (
    KafkaInputError,
    is_kafka_input,
    missing_topics,
    parse_kafka_input,
    read_kafka_lines,
)
from kproxy.analytics.model import InputQuality
from kproxy.analytics.schema import (
    CORRUPT_COLUMN,
    EVENT_TYPES,
    KNOWN_SCHEMA,
    REQUIRED_FIELDS,
    line_schema,
)
from kproxy.analytics.session import hadoop_path

__all__ = [
    "InputError",
    "check_inputs",
    "classify",
    "file_lines",
    "observe_quality",
    "quality_from",
    "read_lines",
]

OK: Final = "ok"
MALFORMED: Final = "malformed"
UNKNOWN_TYPE: Final = "unknown_type"
NEWER_SCHEMA: Final = "newer_schema"
REJECT_KINDS: Final = (MALFORMED, UNKNOWN_TYPE, NEWER_SCHEMA)

EXAMPLE_CHARS: Final = 300  # of a rejected line shown in the report
MAX_UNKNOWN_TYPES: Final = 20  # names listed in the report


class InputError(Exception):
    """An input that names nothing, or a file system Spark cannot open."""


def _java_reason(exc: Exception) -> str:
    java = getattr(exc, "java_exception", None)  # py4j's Py4JJavaError
    if java is None:
        return str(exc)
    cause = java
    while cause.getCause() is not None:  # the root cause names what went wrong
        cause = cause.getCause()
    return str(cause.toString())


def check_inputs(
    spark: SparkSession, inputs: list[str], kafka: dict[str, str] | None = None
) -> None:
    """Raise InputError for an input that matches nothing.

    Spark would raise too, but with a JVM stack trace on stderr; a typo in a path
    deserves one line. An existing empty file or directory, or an empty topic, is fine
    (empty report); a topic the cluster does not have is an error (Spark would read it
    as empty).
    """
    missing, no_topic = [], []
    for text in inputs:
        if is_kafka_input(text):
            try:
                source = parse_kafka_input(text)
                absent = missing_topics(spark, source, kafka or {})
            except KafkaInputError as exc:
                raise InputError(str(exc)) from None
            except Exception as exc:
                raise InputError(f"cannot read {text}: {_java_reason(exc)}") from None
            if absent:
                no_topic.append(text)
            continue
        try:
            fs, path = hadoop_path(spark, text)
            found = fs.globStatus(path)
        except Exception as exc:  # py4j's Py4JJavaError: e.g. no FileSystem for s3a://
            raise InputError(f"cannot read {text}: {_java_reason(exc)}") from None
        if found is None or len(found) == 0:
            missing.append(text)
    if missing:
        raise InputError("no such file or directory: " + ", ".join(missing))
    if no_topic:
        raise InputError("no such topic: " + ", ".join(no_topic))


def file_lines(text: DataFrame) -> DataFrame:
    """A text source's rows (batch or streaming) as event lines: `value` and the `file`
    it came from, blank lines dropped."""
    lines = text.select("value", F.col("_metadata.file_path").alias("file"))
    return lines.filter(F.trim(F.col("value")) != "")


def read_lines(
    spark: SparkSession, inputs: list[str], kafka: dict[str, str] | None = None
) -> DataFrame:
    """Non-blank lines with the file (or topic record) each came from: columns
    `value`, `file`."""
    paths = [t for t in inputs if not is_kafka_input(t)]
    topics = [parse_kafka_input(t) for t in inputs if is_kafka_input(t)]
    frames = []
    if paths:
        frames.append(file_lines(spark.read.option("recursiveFileLookup", "true").text(paths)))
    if topics:
        frames.append(read_kafka_lines(spark, topics, kafka or {}))
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _missing_required() -> Column:
    per_type = [
        (F.col("type") == t) & functools.reduce(operator.or_, (F.col(f).isNull() for f in fs))
        for t, fs in REQUIRED_FIELDS.items()
    ]
    return functools.reduce(operator.or_, per_type)


def classify(lines: DataFrame) -> DataFrame:
    """Parse each line and add `status` (ok or a reject kind); `ts` becomes a timestamp."""
    parsed = lines.select(
        "value",
        "file",
        F.from_json(
            "value",
            line_schema(),
            {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_COLUMN},
        ).alias("e"),
    ).select("value", "file", "e.*")
    parsed = parsed.withColumn("ts", F.try_to_timestamp(F.col("ts")))
    schema, etype = F.col("schema"), F.col("type")
    header_ok = (
        schema.isNotNull()
        & (schema >= 1)
        & etype.isNotNull()
        & F.col("ts").isNotNull()
        & F.col("proxy").isNotNull()
    )
    status = (
        F.when(schema > KNOWN_SCHEMA, F.lit(NEWER_SCHEMA))
        .when(~header_ok, F.lit(MALFORMED))
        .when(~etype.isin(*EVENT_TYPES), F.lit(UNKNOWN_TYPE))
        .when(F.col(CORRUPT_COLUMN).isNotNull() | _missing_required(), F.lit(MALFORMED))
        .otherwise(F.lit(OK))
    )
    return parsed.withColumn("status", status)


def observe_quality(classified: DataFrame) -> tuple[DataFrame, Observation]:
    """`classified` with an Observation that fills in when the DataFrame is first run."""
    status = F.col("status")
    example_text = F.concat(
        F.col("file"), F.lit(": "), F.substring(F.col("value"), 1, EXAMPLE_CHARS)
    )
    observation = Observation("kproxy_input_quality")
    observed = classified.observe(
        observation,
        F.count(F.lit(1)).alias("lines"),
        F.count_if(status == OK).alias("events"),
        *(F.count_if(status == kind).alias(kind) for kind in REJECT_KINDS),
        # Type names are few in any real log; a capped list goes into the report.
        F.collect_set(F.when(status == UNKNOWN_TYPE, F.substring(F.col("type"), 1, 100))).alias(
            "unknown_types"
        ),
        F.max(F.when(status == NEWER_SCHEMA, F.col("schema"))).alias("newest_schema"),
        *(F.min(F.when(status == kind, example_text)).alias(f"ex_{kind}") for kind in REJECT_KINDS),
    )
    return observed, observation


def quality_from(metrics: dict[str, Any]) -> InputQuality:
    """The Observation's metrics (after the pass ran) as an InputQuality."""
    examples = {k: str(metrics[f"ex_{k}"]) for k in REJECT_KINDS if metrics.get(f"ex_{k}")}
    names = sorted(str(n) for n in metrics.get("unknown_types") or ())
    newest = metrics.get("newest_schema")
    return InputQuality(
        lines=int(metrics.get("lines") or 0),
        events=int(metrics.get("events") or 0),
        malformed=int(metrics.get(MALFORMED) or 0),
        unknown_type=int(metrics.get(UNKNOWN_TYPE) or 0),
        newer_schema=int(metrics.get(NEWER_SCHEMA) or 0),
        unknown_types=tuple(names[:MAX_UNKNOWN_TYPES]),
        newest_schema=int(newest) if newest is not None else None,
        examples=examples,
    )
