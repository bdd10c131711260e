"""What `kproxy analyze` calls (kproxy/cli.py parses the arguments and has checked that
the analytics extra is installed)."""

from __future__ import annotations

import argparse

__all__ = ["run_analyze"]


def run_analyze(args: argparse.Namespace) -> int:
    """`args` as `kproxy.analytics.arguments.add_analyze_arguments` defines them."""
    from kproxy.analytics.job import run_args  # imports pyspark: only once we know it is there

    return run_args(args)
