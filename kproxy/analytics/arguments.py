"""The arguments of `kproxy analyze` (and of `python -m kproxy.analytics.job`).

No PySpark here: `kproxy --help` must work without the analytics extra.
"""

from __future__ import annotations

import argparse
from typing import Final

__all__ = ["DEFAULT_MASTER", "add_analyze_arguments", "kafka_options"]

DEFAULT_MASTER: Final = "local[*]"


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (got {text!r})")
    return key, value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number (got {text!r})") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 (got {text!r})")
    return value


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1 (got {text!r})")
    return int(text)


def add_analyze_arguments(p: argparse.ArgumentParser, *, default_master: str | None) -> None:
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="event files, directories, globs, Hadoop URIs, or kafka://HOST:PORT/TOPIC",
    )
    p.add_argument("--out", default="kproxy-analysis", metavar="DIR", help="output directory")
    p.add_argument(
        "--master",
        default=default_master,
        metavar="URL",
        help="Spark master URL (default: "
        + (default_master or f"spark-submit's, else {DEFAULT_MASTER}")
        + ")",
    )
    p.add_argument("--spark-ui", action="store_true", help="enable the Spark web UI")
    p.add_argument(
        "--kafka-option",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of Spark's Kafka source (kafka.security.protocol=SSL, "
        "startingOffsets=..., ...); repeat for more",
    )
    follow = p.add_argument_group("following a topic (or a directory) as it grows")
    follow.add_argument(
        "--follow",
        action="store_true",
        help="run as a Structured Streaming job that keeps DIR's tables and report current",
    )
    follow.add_argument(
        "--checkpoint",
        default=None,
        metavar="DIR",
        help="the stream's checkpoint (default: OUT/_checkpoint); a restart continues there",
    )
    follow.add_argument(
        "--trigger-seconds", type=_positive, default=10.0, metavar="S", help="default: 10"
    )
    follow.add_argument(
        "--window-seconds", type=_count, default=60, metavar="S", help="default: 60"
    )
    follow.add_argument(
        "--watermark-seconds",
        type=_positive,
        default=600.0,
        metavar="S",
        help="events older than the newest seen minus this are late (default: 600)",
    )
    follow.add_argument(
        "--report-every",
        type=_count,
        default=3,
        metavar="N",
        help="rewrite report.html every N triggers with data, and once the source has "
        "nothing more waiting (default: 3)",
    )


def kafka_options(pairs: list[tuple[str, str]]) -> dict[str, str]:
    return dict(pairs)
