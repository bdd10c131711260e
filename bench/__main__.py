"""``python -m bench``: the benchmark harness (see bench/README.md).

python -m bench run [--quick] [--rounds N] [--workloads a,b] [--paths x,y] [--out DIR]
python -m bench ab WORKLOAD [--baseline REV] [--rounds N] [--scale S]
python -m bench report RESULTS.json [--md FILE]
python -m bench soak [--seconds S] [--rate R] [--chaos-every C]
python -m bench list
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench import ab, report
from bench.upstreams import ALL_PATHS, PATH_DESCRIPTIONS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    from bench import run

    run.add_arguments(sub.add_parser("run", help="run the benchmark"))
    ab.add_arguments(sub.add_parser("ab", help="one workload: kproxy against haproxy and direct"))
    rep = sub.add_parser("report", help="regenerate RESULTS.md from a JSON file")
    rep.add_argument("results", type=Path)
    rep.add_argument("--md", type=Path, default=None, help="default: beside the JSON file")
    from bench import soak

    soak.add_arguments(sub.add_parser("soak", help="an hour through kproxy while brokers churn"))
    sub.add_parser("list", help="workloads and paths")
    args = parser.parse_args(argv)

    if args.cmd == "run":
        return run.main_run(args)
    if args.cmd == "ab":
        return ab.main_ab(args)
    if args.cmd == "soak":
        return soak.main_soak(args)
    if args.cmd == "report":
        results = json.loads(args.results.read_text())
        md = args.md or args.results.with_name("RESULTS.md")
        report.write_outputs(results, md, args.results)
        print(f"wrote {md}")
        return 0
    if args.cmd == "list":
        print("workloads (full-mode parameters):")
        from bench.catalog import workloads

        for w in workloads(quick=False):
            print(f"  {w.name:26} {w.upstream:6} {w.title}")
        print("paths:")
        for p in ALL_PATHS:
            print(f"  {p:26} {PATH_DESCRIPTIONS[p]}")
        return 0
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
