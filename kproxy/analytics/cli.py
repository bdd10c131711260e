"""What `kproxy analyze` calls (kproxy/cli.py parses the arguments and has checked that
the analytics extra is installed)."""

from __future__ import annotations

import argparse
import glob
import os
import sys

__all__ = ["missing_local_inputs", "run_analyze"]

# What `kproxy.analytics.job` exits with for an input that names nothing.
EXIT_INPUT = 2


def run_analyze(args: argparse.Namespace) -> int:
    """`args` as `kproxy.analytics.arguments.add_analyze_arguments` defines them."""
    if not args.follow:
        missing = missing_local_inputs(list(args.inputs), args.master)
        if missing:
            # Said before Spark starts (seconds), not after.
            print(
                f"kproxy analyze: no such file or directory: {', '.join(missing)}", file=sys.stderr
            )
            return EXIT_INPUT
    from kproxy.analytics.job import run_args  # imports pyspark: only once we know it is there

    return run_args(args)


def missing_local_inputs(inputs: list[str], master: str | None) -> list[str]:
    """The inputs that are paths on this machine's file system and match nothing. Only
    where a path without a scheme is a local one: a local master and no Hadoop
    configuration (which may make it HDFS's); a Hadoop glob Python's cannot read
    (`{a,b}`) is left to Spark."""
    if not (master or "local").startswith("local") or os.environ.get("HADOOP_CONF_DIR"):
        return []
    missing = []
    for text in inputs:
        path = text.removeprefix("file://")
        if "://" in path or "{" in path:
            continue
        if not glob.glob(path):
            missing.append(text)
    return missing
