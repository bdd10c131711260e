"""What `kproxy analyze` calls (kproxy/cli.py parses the arguments and has checked that
the analytics extra is installed)."""

from __future__ import annotations

import argparse

__all__ = ["run_analyze"]


def run_analyze(args: argparse.Namespace) -> int:
    """`args`: inputs (list), out, master, spark_ui, as kproxy/cli.py defines them."""
    from kproxy.analytics.job import run  # imports pyspark: only once we know it is there

    return run(list(args.inputs), args.out, args.master, bool(args.spark_ui))
