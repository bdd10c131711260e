"""What `kproxy analyze` calls (kproxy/cli.py parses the arguments)."""

from __future__ import annotations

import argparse
import importlib.util
import sys

__all__ = ["MISSING_HINT", "run_analyze"]

MISSING_HINT = "kproxy analyze needs the analytics extra: pip install 'kproxy[analytics]'"
EXIT_USAGE = 2


def run_analyze(args: argparse.Namespace) -> int:
    """`args`: inputs (list), out, master, spark_ui, as kproxy/cli.py defines them."""
    # kproxy/cli.py checks for pyspark only; matplotlib draws the plots.
    if importlib.util.find_spec("matplotlib") is None:
        print(MISSING_HINT, file=sys.stderr)
        return EXIT_USAGE
    from kproxy.analytics.job import run  # imports pyspark: only once we know it is there

    return run(list(args.inputs), args.out, args.master, bool(args.spark_ui))
