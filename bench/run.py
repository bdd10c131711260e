"""``python -m bench run``: the command line of the benchmark harness
(``bench.harness``); it renders the results to Markdown at the end
(``bench/report.py``)."""

from __future__ import annotations

import argparse
import signal
import tempfile
from pathlib import Path
from typing import Any

from bench import report
from bench.catalog import workloads
from bench.harness import Harness
from bench.options import PAIRED_HELP, Options
from bench.peers import BENCH
from bench.upstreams import ALL_PATHS, DEFAULT_PATHS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quick",
        action="store_true",
        help="small counts and 2 rounds (a few minutes): proves the harness works",
    )
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 3; quick: 2)")
    p.add_argument(
        "--workloads", default="", help="comma-separated workload names (default: all; see `list`)"
    )
    p.add_argument(
        "--paths",
        default=",".join(DEFAULT_PATHS),
        help="comma-separated paths (default: all); direct is always included",
    )
    p.add_argument("--scale", type=float, default=1.0, help="multiply every message count")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory for results.json and RESULTS.md "
        "(default: bench/; quick: /tmp/kproxy-bench-quick)",
    )
    p.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="peers' logs and data, kept (default: a temporary directory, removed at the end)",
    )
    p.add_argument("--run-timeout", type=float, default=300.0, help="seconds per run")
    p.add_argument(
        "--paired", type=int, nargs="?", const=-1, default=0, metavar="TURNS", help=PAIRED_HELP
    )


def options_from(args: argparse.Namespace) -> Options:
    known = {w.name for w in workloads(True)}
    wanted = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise SystemExit(f"unknown workload(s) {unknown}; known: {sorted(known)}")
    paths = [p for p in args.paths.split(",") if p]
    bad = [p for p in paths if p not in ALL_PATHS]
    if bad:
        raise SystemExit(f"unknown path(s) {bad}; known: {list(ALL_PATHS)}")
    if "direct" not in paths:
        paths.insert(0, "direct")  # every ratio is to direct, measured in the same run
    out = args.out or (Path(tempfile.gettempdir()) / "kproxy-bench-quick" if args.quick else BENCH)
    rounds = args.rounds or (2 if args.quick else 3)
    return Options(
        quick=args.quick,
        rounds=rounds,
        workloads=wanted,
        paths=paths,
        scale=args.scale,
        out_json=out / "results.json",
        out_md=out / "RESULTS.md",
        workdir=args.workdir,
        run_timeout=args.run_timeout,
    )


def main_run(args: argparse.Namespace) -> int:
    opts = options_from(args)
    harness = Harness(opts)
    if args.paired:
        from bench.paired import PairedHarness

        harness = PairedHarness(opts, args.paired)

    def on_sigterm(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        results = harness.run()
    except KeyboardInterrupt:
        harness.results["meta"]["interrupted"] = True
        harness.save()
        print("interrupted; partial results in", opts.out_json)
        return 130
    if opts.out_md is not None:
        report.write_outputs(results, opts.out_md, opts.out_json)
    wall = results["meta"]["wall_seconds"]
    print(f"done in {wall / 60:.1f} min: {opts.out_json}, {opts.out_md}")
    return 0
