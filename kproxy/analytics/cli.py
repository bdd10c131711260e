"""What `kproxy analyze` calls (kproxy/cli.py parses the arguments and has checked that
the analytics extra is installed)."""

from __future__ import annotations

import argparse

from kproxy.analytics.arguments import kafka_options

__all__ = ["run_analyze"]


def run_analyze(args: argparse.Namespace) -> int:
    """`args` as `kproxy.analytics.arguments.add_analyze_arguments` defines them."""
    if args.follow:
        from kproxy.analytics.follow import run_follow  # imports pyspark

        return run_follow(args)
    from kproxy.analytics.job import run  # imports pyspark: only once we know it is there

    return run(
        list(args.inputs),
        args.out,
        args.master,
        bool(args.spark_ui),
        kafka=kafka_options(args.kafka_option),
    )
