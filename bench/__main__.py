"""``python -m bench``: the benchmark harness (see bench/README.md).

python -m bench run [--quick] [--rounds N] [--workloads a,b] [--paths x,y] [--out DIR]
python -m bench ab WORKLOAD [--baseline REV] [--rounds N] [--scale S]
python -m bench report RESULTS.json [--md FILE] [--png FILE]
python -m bench list
python -m bench broker-writes [--runs N] [--count N] [--out FILE]
python -m bench profile-top PROFILE.txt [--top 25]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

from bench import ab, broker_writes, report
from bench.upstreams import ALL_PATHS, PATH_DESCRIPTIONS


def _frame_name(frame: str) -> str:
    # py-spy raw frames read "function (path/to/file.py:123)": keep function and file,
    # drop the line so that one function is one row.
    m = re.match(r"(.*) \((.*?)(?::\d+)?\)$", frame)
    if not m:
        return frame
    fn, file = m.groups()
    parts = Path(file).parts
    short = "/".join(parts[-2:]) if len(parts) >= 2 else file
    return f"{fn} ({short})"


def profile_top(path: Path, top: int) -> str:
    """Self and inclusive sample counts per function from py-spy's ``--format raw``."""
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame_name(f) for f in stack.split(";")]
        # The first frame is the thread name ("process 123:\"MainThread\"").
        frames = [f for f in frames if not f.startswith("process ") and not f.startswith("thread ")]
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        for f in set(frames):
            incl[f] += count
    if not total:
        return f"{path}: no samples\n"
    out = [f"{path}: {total} samples", "", "self %  function"]
    out += [f"{100 * c / total:6.1f}  {f}" for f, c in own.most_common(top)]
    out += ["", "incl %  function"]
    out += [f"{100 * c / total:6.1f}  {f}" for f, c in incl.most_common(top)]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    from bench import run

    run.add_arguments(sub.add_parser("run", help="run the benchmark"))
    ab.add_arguments(sub.add_parser("ab", help="one workload: kproxy against haproxy and direct"))
    rep = sub.add_parser("report", help="regenerate RESULTS.md and the plot from a JSON file")
    rep.add_argument("results", type=Path)
    rep.add_argument("--md", type=Path, default=None, help="default: beside the JSON file")
    rep.add_argument("--png", type=Path, default=None, help="default: beside the JSON file")
    sub.add_parser("list", help="workloads and paths")
    broker_writes.add_arguments(
        sub.add_parser("broker-writes", help="Apache Kafka's CPU per message appended, run by run")
    )
    prof = sub.add_parser("profile-top", help="summarise a py-spy raw profile")
    prof.add_argument("profile", type=Path, nargs="+")
    prof.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)

    if args.cmd == "run":
        return run.main_run(args)
    if args.cmd == "ab":
        return ab.main_ab(args)
    if args.cmd == "report":
        results = json.loads(args.results.read_text())
        md = args.md or args.results.with_name("RESULTS.md")
        png = args.png or args.results.with_name("results.png")
        report.write_outputs(results, md, png, args.results)
        print(f"wrote {md} and {png}")
        return 0
    if args.cmd == "broker-writes":
        return broker_writes.main_broker_writes(args)
    if args.cmd == "list":
        print("workloads (full-mode parameters):")
        from bench.catalog import workloads

        for w in workloads(quick=False):
            print(f"  {w.name:26} {w.upstream:6} {w.title}")
        print("paths:")
        for p in ALL_PATHS:
            print(f"  {p:26} {PATH_DESCRIPTIONS[p]}")
        return 0
    if args.cmd == "profile-top":
        for path in args.profile:
            sys.stdout.write(profile_top(path, args.top))
        return 0
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
