"""A SparkSession with the settings `kproxy analyze` wants.

Settings not made here come from wherever Spark takes them (spark-submit flags,
`spark-defaults.conf` under $SPARK_CONF_DIR, `PYSPARK_SUBMIT_ARGS` such as
`--driver-memory 4g pyspark-shell`): this module only sets what the report depends on
or what a laptop run needs.
"""

from __future__ import annotations

import os
from typing import Any, cast

from pyspark.sql import SparkSession

__all__ = [
    "APP_NAME",
    "build_session",
    "hadoop_path",
    "is_local_master",
    "local_shuffle_partitions",
    "under_spark_submit",
]

APP_NAME = "kproxy-analyze"
LOOPBACK = "127.0.0.1"


def hadoop_path(spark: SparkSession, text: str) -> tuple[Any, Any]:
    """Hadoop's FileSystem for `text` (a path or any URI it reads) and its Path."""
    sc = spark.sparkContext
    jvm = cast(Any, sc._jvm)
    conf = cast(Any, sc._jsc).hadoopConfiguration()
    path = jvm.org.apache.hadoop.fs.Path(text)
    return path.getFileSystem(conf), path


def is_local_master(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def local_shuffle_partitions(master: str) -> int:
    """Two per core of a local master (`local`, `local[4]`, `local[*]`, `local[4,2]`)."""
    inner = master[len("local[") : -1] if master.startswith("local[") else "1"
    first = inner.split(",")[0].strip()
    cores = (os.cpu_count() or 1) if first == "*" else int(first) if first.isdigit() else 1
    return max(2, 2 * cores)


def under_spark_submit() -> bool:
    """True when spark-submit started this Python process (its JVM is already up and
    handed the gateway to Python): then the master is spark-submit's to choose."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(
    master: str | None, *, spark_ui: bool = False, packages: list[str] | None = None
) -> SparkSession:
    """Start (or join) a session. `master=None` leaves it to spark-submit / defaults.

    `packages` are fetched by Spark's Ivy from Maven Central once and cached; under
    spark-submit (the JVM already runs) they must come with its `--packages`.
    """
    builder = SparkSession.builder.appName(APP_NAME)
    if packages:
        builder = builder.config("spark.jars.packages", ",".join(packages))
    if master is not None:
        builder = builder.master(master)
    if master is not None and is_local_master(master):
        # A local run talks only to itself: keep the driver off the network (no firewall
        # prompt, no wrong interface picked on a laptop with VPNs). A cluster master
        # needs the driver reachable by executors, so this stays Spark's choice there.
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
        builder = (
            builder.config("spark.driver.bindAddress", LOOPBACK)
            .config("spark.driver.host", LOOPBACK)
            # Spark's 200 shuffle partitions suit a cluster; on one machine each is a
            # task to schedule for every small aggregate (seconds per table).
            .config("spark.sql.shuffle.partitions", str(local_shuffle_partitions(master)))
        )
    builder = (
        builder.config("spark.ui.enabled", "true" if spark_ui else "false")
        # kproxy's own progress lines replace the console progress bar, which would
        # interleave with them.
        .config("spark.ui.showConsoleProgress", "false")
        # Times in the tables and the report are UTC, as in the event log.
        .config("spark.sql.session.timeZone", "UTC")
        # The plans of the wide event schema are long: no warning that they were cut.
        .config("spark.sql.debug.maxToStringFields", "200")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    sc = spark.sparkContext
    running = sc.master or ""
    if (
        master is None
        and is_local_master(running)
        and not sc.getConf().contains("spark.sql.shuffle.partitions")
    ):
        # `spark-submit --master local[N]`: the same few partitions as above (a SQL
        # setting, so it can still change now), unless spark-submit was given one.
        spark.conf.set("spark.sql.shuffle.partitions", str(local_shuffle_partitions(running)))
    return spark
