"""Event topics as inputs: `kafka://BOOTSTRAP/TOPIC`, read with Spark's Kafka source.

`BOOTSTRAP` is one `host:port` or several, comma-separated (`kafka://a:9092,b:9092/t`).
The source is `org.apache.spark:spark-sql-kafka-0-10_2.13` of exactly the Spark version
PySpark runs (`CONNECTOR`): Spark's Ivy fetches it from Maven Central on first use
and caches it (~/.ivy2.5.2); under spark-submit, pass it with `--packages`.

A record's value is the event's JSON object (`kproxy.observe.event_kafka`); it goes through
the same parsing and classification as a file's line (`kproxy.analytics.inputs`),
with `kafka://BOOTSTRAP/TOPIC/PARTITION@OFFSET` where a file name would be (the
report's examples of rejected events name it). A record without a value is not an
event and is not counted, like a blank line.

Source options (`--kafka-option KEY=VALUE`) go to Spark as they are: the consumer's
own settings with the `kafka.` prefix (`kafka.security.protocol=SASL_SSL`, ...) and
the source's (`startingOffsets`, `endingOffsets`, `maxOffsetsPerTrigger`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, cast

import pyspark
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

__all__ = [
    "CONNECTOR",
    "KAFKA_SCHEME",
    "KafkaInput",
    "is_kafka_input",
    "kafka_source_options",
    "missing_topics",
    "packages_for",
    "parse_kafka_input",
    "read_kafka_lines",
    "record_lines",
]

KAFKA_SCHEME: Final = "kafka://"
# Spark 4 is built for Scala 2.13; the connector must be the running Spark's own version.
CONNECTOR: Final = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"


class KafkaInputError(ValueError):
    pass


@dataclass(frozen=True)
class KafkaInput:
    bootstrap: str
    topic: str

    @property
    def uri(self) -> str:
        return f"{KAFKA_SCHEME}{self.bootstrap}/{self.topic}"


def is_kafka_input(text: str) -> bool:
    return text.startswith(KAFKA_SCHEME)


def parse_kafka_input(text: str) -> KafkaInput:
    rest = text[len(KAFKA_SCHEME) :] if is_kafka_input(text) else ""
    bootstrap, _, topic = rest.partition("/")
    servers = [s for s in bootstrap.split(",") if s]
    if not servers or not topic or "/" in topic:
        raise KafkaInputError(f"{text}: expected kafka://HOST:PORT[,HOST:PORT...]/TOPIC")
    for server in servers:
        host, _, port = server.rpartition(":")
        if not host or not port.isdigit():
            raise KafkaInputError(f"{text}: {server!r} is not host:port")
    return KafkaInput(",".join(servers), topic)


def packages_for(inputs: list[str]) -> list[str]:
    """Maven packages the inputs need: Spark's Kafka source for `kafka://` topics."""
    if any(is_kafka_input(t) for t in inputs):
        return [CONNECTOR]
    return []


def kafka_source_options(
    source: KafkaInput, options: dict[str, str], *, streaming: bool
) -> dict[str, str]:
    """The Spark Kafka source's options for `source`; `options` override the defaults.

    Batch reads everything there is when the job starts (earliest to latest); a stream
    starts from the earliest offset the first time and from its checkpoint after.
    """
    opts = {
        "kafka.bootstrap.servers": source.bootstrap,
        "subscribe": source.topic,
        "startingOffsets": "earliest",
    }
    if not streaming:
        opts["endingOffsets"] = "latest"
    opts.update(options)
    return opts


def record_lines(records: DataFrame) -> DataFrame:
    """Kafka records -> the `value`, `file` columns of an event line."""
    where: Column = F.concat(
        F.lit(KAFKA_SCHEME),
        F.col("bootstrap"),
        F.lit("/"),
        F.col("topic"),
        F.lit("/"),
        F.col("partition").cast("string"),
        F.lit("@"),
        F.col("offset").cast("string"),
    )
    lines = records.select(F.col("value").cast("string").alias("value"), where.alias("file"))
    return lines.filter(F.col("value").isNotNull() & (F.trim(F.col("value")) != ""))


def read_kafka_lines(
    spark: SparkSession, sources: list[KafkaInput], options: dict[str, str]
) -> DataFrame:
    """Every record of every source topic (batch), as event lines."""
    frames = []
    for source in sources:
        opts = kafka_source_options(source, options, streaming=False)
        records = spark.read.format("kafka").options(**opts).load()
        frames.append(record_lines(records.withColumn("bootstrap", F.lit(source.bootstrap))))
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def missing_topics(spark: SparkSession, source: KafkaInput, options: dict[str, str]) -> bool:
    """True when the cluster answers and has no such topic (Spark would read it as
    empty). Asked with the Kafka AdminClient the connector brings, with the same
    `kafka.*` settings the source uses."""
    jvm = cast(Any, spark.sparkContext._jvm)
    props = jvm.java.util.Properties()
    props.setProperty("bootstrap.servers", source.bootstrap)
    props.setProperty("request.timeout.ms", "30000")
    props.setProperty("default.api.timeout.ms", "30000")
    for key, value in options.items():
        if key.startswith("kafka."):
            props.setProperty(key[len("kafka.") :], value)
    admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
    try:
        names = admin.listTopics().names().get()
        return not bool(names.contains(source.topic))
    finally:
        admin.close()


def fetch_connector() -> str:
    """Fetch the connector (and its dependencies) into Spark's Ivy cache; the jars."""
    from kproxy.analytics.session import build_session

    spark = build_session("local[1]", packages=[CONNECTOR])
    try:
        return str(spark.sparkContext.getConf().get("spark.jars"))
    finally:
        spark.stop()


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["fetch"]:
        sys.exit("usage: python -m kproxy.analytics.kafka_input fetch")
    print(f"{CONNECTOR}: {len(fetch_connector().split(','))} jars in Spark's Ivy cache")
