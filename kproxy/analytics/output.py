"""Where the report's own files (report.html, plots, summary.json) go.

Spark writes the Parquet tables to DIR on whatever file system DIR names. The report
files are written by this process: straight into DIR when that is the local file
system, otherwise into a temporary directory and then copied through Hadoop's
FileSystem (hdfs://, s3a://, ...), so they land next to the tables either way.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from pyspark.sql import SparkSession

from kproxy.analytics.session import hadoop_path

__all__ = ["join", "replace_file", "report_dir"]


def join(out: str, *names: str) -> str:
    """`out/name/...` for local paths and URIs alike."""
    return "/".join([out.rstrip("/"), *names])


def local_dir(spark: SparkSession, out: str) -> Path | None:
    """DIR as a local path when it is on the local file system (also when a relative
    DIR resolves there through fs.defaultFS), else None."""
    fs, path = hadoop_path(spark, out)
    if str(fs.getScheme()) != "file":
        return None
    return Path(str(fs.makeQualified(path).toUri().getPath()))


def replace_file(path: Path, text: str) -> None:
    """Write `path` as a new file renamed over the old one, so a reader (a dashboard
    polling status.json, a browser reloading report.html) sees the old file or the
    new one, never a half-written one."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


@contextmanager
def report_dir(spark: SparkSession, out: str) -> Iterator[Path]:
    """A local directory to write report files into; published to `out` on exit."""
    local = local_dir(spark, out)
    if local is not None:
        local.mkdir(parents=True, exist_ok=True)
        yield local
        return
    staging = Path(tempfile.mkdtemp(prefix="kproxy-report-"))
    try:
        yield staging
        fs, path = hadoop_path(spark, out)
        jvm = cast(Any, spark.sparkContext._jvm)
        for item in sorted(staging.rglob("*")):
            if item.is_file():
                target = jvm.org.apache.hadoop.fs.Path(path, str(item.relative_to(staging)))
                fs.copyFromLocalFile(False, True, jvm.org.apache.hadoop.fs.Path(str(item)), target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
