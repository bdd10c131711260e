"""``python -m bench ab WORKLOAD``: the quick A/B a developer runs before and after a
change to kproxy's hot path, in minutes.

One workload, every path once per round, rounds interleaved: direct, haproxy (the
floor), kproxy on uvloop from the working tree and, with ``--baseline REV``, kproxy on
uvloop from that git revision (checked out in a temporary worktree); with
``--standard-loop`` both kproxys run on the standard asyncio loop instead. Rounds are longer
than the full run's (``--scale``, 4 by default) so that one round's ratio holds still,
and the figures that hold stillest on a shared machine are there: every proxy's CPU per
message moved (haproxy's too) from /proc, and kproxy's CPU per request and per GB from
its own counters. Each figure is the median over the rounds with its min-max spread.

    python -m bench ab latency --baseline HEAD~1 --rounds 7
    python -m bench ab produce-1KiB
    python -m bench ab latency --baseline HEAD --compile-baseline   # mypyc vs pure Python
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any, Final

from bench.ab_tables import paired_lines, summary_lines
from bench.builds import checkout, compile_in_place
from bench.options import PAIRED_HELP, Options
from bench.results_file import COMPILED_PATHS
from bench.steal import run_steal


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload", help="one workload (python -m bench list)")
    p.add_argument("--baseline", metavar="REV", help="also run kproxy at this git revision")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--scale", type=float, default=4.0, help="message counts x this (default 4)")
    p.add_argument("--no-haproxy", action="store_true", help="leave haproxy out")
    p.add_argument(
        "--paired", type=int, nargs="?", const=-1, default=0, metavar="TURNS", help=PAIRED_HELP
    )
    p.add_argument("--out", type=Path, default=None, help="results.json here (default: a temp dir)")
    p.add_argument(
        "--standard-loop",
        action="store_true",
        help="run kproxy (the --baseline revision's and, with --compiled, the compiled "
        "build too) on the standard asyncio loop instead of uvloop (the paths "
        "kproxy-asyncio, kproxy-compiled-asyncio)",
    )
    p.add_argument(
        "--compiled",
        action="store_true",
        help="also run this checkout built with mypyc, as the image runs it: kproxy-compiled "
        "(kproxy-compiled-asyncio with --standard-loop)",
    )
    p.add_argument(
        "--quota",
        action="store_true",
        help="give this tree's kproxy a quota on every client that none reaches (with "
        "--baseline HEAD: what quotas cost)",
    )
    p.add_argument(
        "--authorization",
        action="store_true",
        help="give this tree's kproxy 20 authorization rules, the last allowing what the "
        "workload does (with --baseline HEAD: what the rules cost)",
    )
    p.add_argument(
        "--tenancy",
        action="store_true",
        help="put this tree's kproxy's clients in a tenant (every name prefixed and "
        "unprefixed; with --baseline HEAD: what tenancy costs)",
    )
    p.add_argument(
        "--compile-baseline",
        action="store_true",
        help="build the baseline checkout with mypyc (KPROXY_COMPILE=1, setup.py): "
        "kproxy-base is then the compiled build of --baseline",
    )


# A quota on every client that none reaches (bench ab --quota): what quotas cost a
# request when they never throttle.
UNREACHED_QUOTA: Final = {
    "quotas": {
        "entries": [
            {
                "produce_bytes_per_second": 1e12,
                "fetch_bytes_per_second": 1e12,
                "requests_per_second": 1e9,
            }
        ]
    }
}


# Twenty rules that apply to the bench's clients (bench ab --authorization): nineteen
# name other topics, groups and transactional ids (literal, prefix and glob), the last
# allows everything, so every entity a request names is checked against all of them
# the first time its connection sees it.
TWENTY_RULES: Final = {
    "listeners": {
        "authorization": {
            "rules": [
                *(
                    {"effect": "deny", "topics": [f"secret-{i}", f"audit-{i}-*", f"*-{i}-pii"]}
                    for i in range(10)
                ),
                *(
                    {"effect": "deny", "groups": [f"ops-{i}-*"], "transactional_ids": [f"tx-{i}"]}
                    for i in range(9)
                ),
                {"effect": "allow", "topics": ["*"], "groups": ["*"], "transactional_ids": ["*"]},
            ]
        }
    }
}


# One tenant that takes every connection (bench ab --tenancy): every name the
# workload's clients send is prefixed, every name answered unprefixed.
ONE_TENANT: Final = {"listeners": {"tenancy": {"tenants": [{"name": "bench"}]}}}


def _sections(*chosen: tuple[dict[str, Any], bool]) -> dict[str, Any]:
    """The configuration sections of the options chosen, merged section by section."""
    merged: dict[str, Any] = {}
    for sections, on in chosen:
        for name, values in sections.items() if on else ():
            merged.setdefault(name, {}).update(values)
    return merged


def compiled_path(loop: str) -> str:
    """The path of this checkout's mypyc build on `loop` ("uvloop" or "asyncio")."""
    return next(path for path, on in COMPILED_PATHS.items() if on == loop)


def ab_paths(args: argparse.Namespace) -> tuple[list[str], str]:
    """The paths an A/B runs, in order, and the loop its kproxys run on (the tree's and
    the baseline's alike)."""
    paths = ["direct", *([] if args.no_haproxy else ["haproxy"])]
    loop = "asyncio" if args.standard_loop else "uvloop"
    paths.append(f"kproxy-{loop}")
    if args.compiled:
        paths.append(compiled_path(loop))
    if args.baseline:
        paths.append("kproxy-base")
    return paths, loop


def main_ab(args: argparse.Namespace) -> int:
    from bench.catalog import workloads
    from bench.harness import Harness
    from bench.machine import raise_fd_limit

    if args.workload not in {w.name for w in workloads(quick=False)}:
        raise SystemExit(f"unknown workload {args.workload!r} (python -m bench list)")
    paths, loop = ab_paths(args)
    out = args.out or Path(tempfile.mkdtemp(prefix="kproxy-ab-results-"))
    out.mkdir(parents=True, exist_ok=True)
    raise_fd_limit()
    if args.compile_baseline and not args.baseline:
        raise SystemExit("--compile-baseline needs --baseline REV (HEAD: the same code)")
    if args.paired:
        from bench.paired import pairable

        wl = next(w for w in workloads(quick=False) if w.name == args.workload)
        why_not = pairable(wl)
        if why_not is not None:
            raise SystemExit(f"--paired: {why_not}")
    with checkout(args.baseline) as baseline:
        if baseline is not None and args.compile_baseline:
            compile_in_place(baseline)
        opts = Options(
            rounds=args.rounds,
            workloads=[args.workload],
            paths=paths,
            scale=args.scale,
            out_json=out / "results.json",
            out_md=None,
            baseline_source=baseline,
            baseline_loop=loop,
            kproxy_config=_sections(
                (UNREACHED_QUOTA, args.quota),
                (TWENTY_RULES, args.authorization),
                (ONE_TENANT, args.tenancy),
            ),
            tenant_prefix="bench." if args.tenancy else "",
        )
        if args.paired:
            from bench.paired import PairedHarness

            results = PairedHarness(opts, args.paired).run()
        else:
            results = Harness(opts).run()
    print_ab(args, results, opts.out_json, loop)
    return 0


def print_ab(args: argparse.Namespace, res: dict[str, Any], out: Path, loop: str) -> None:
    """The A/B's tables: every path's figures, how still each proxy held, and the tree
    against the baseline round by round."""
    against = f", baseline {args.baseline}" if args.baseline else ""
    paired = ""
    if args.paired:
        from bench.paired import TURNS_BY_KIND

        kind = res["workloads"][args.workload]["kind"]
        paired = f", {args.paired if args.paired > 0 else TURNS_BY_KIND[kind]} turns a path a round"
    print(f"\n{args.workload}, {args.rounds} rounds{paired}, scale {args.scale}{against}: {out}")
    for line in summary_lines(res, args.workload):
        print(line)
    print(f"CPU taken by the host (steal) per run: {run_steal(res, args.workload)}")
    if args.baseline:
        # The tree's build that matches the baseline's, when there is one.
        tree = compiled_path(loop) if args.compiled and args.compile_baseline else f"kproxy-{loop}"
        _print_table(paired_lines(res, args.workload, tree, "kproxy-base"))


def _print_table(lines: list[str]) -> None:
    """A table after the summary, a blank line before it; nothing for none."""
    if lines:
        print()
        print("\n".join(lines))
