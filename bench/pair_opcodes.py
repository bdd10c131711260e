"""How many bytecode instructions and Python calls a pair of `bench.session_pairs` runs,
function by function (pure Python only):

    python -m bench.pair_opcodes [--pairs 20] [--top 25] [--json-only] [WHICH ...]

`bench.cold_lines` counts the machine instructions and the cache lines a pair fetches
from memory, for the process as a whole; this names the Python functions they come
from. It traces each pair's opcodes with `sys.settrace` (`f_trace_opcodes`), after a
warm-up, and prints the total per pair and the functions that ran the most. A function
compiled by mypyc runs no bytecode and does not show: the counts are pure Python's,
and `--compiled` is refused. Not a timing: tracing slows the pair a hundredfold.

WHICH names pairs of `bench.session_pairs` (default: ``runtime`` and
``runtime-fetch-small``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from bench.session_pairs import check_pair_names, warmed_pairs
from kproxy.observe.build_info import PYTHON, hot_path_build

DEFAULT_PAIRS = ("runtime", "runtime-fetch-small")
_REPO = str(Path(__file__).resolve().parent.parent) + "/"


def function_name(frame: FrameType) -> str:
    """path:line:name of the function a frame runs, its path from the repository."""
    code = frame.f_code
    return f"{code.co_filename.removeprefix(_REPO)}:{code.co_firstlineno}:{code.co_qualname}"


def count(run: Callable[[], object], calls: int) -> tuple[Counter[str], Counter[str]]:
    """Opcodes and calls by function over `calls` calls of `run`."""
    opcodes: Counter[str] = Counter()
    entered: Counter[str] = Counter()

    def trace(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
        frame.f_trace_opcodes = True
        if event == "opcode":
            opcodes[function_name(frame)] += 1
        elif event == "call":
            entered[function_name(frame)] += 1
        return trace

    sys.settrace(trace)
    try:
        for _ in range(calls):
            run()
    finally:
        sys.settrace(None)
    return opcodes, entered


def measure(which: list[str], pairs: int, top: int) -> dict[str, object]:
    figures: dict[str, object] = {}
    for name, run, per_call in warmed_pairs(which):
        calls = max(1, pairs // per_call)
        opcodes, entered = count(run, calls)
        n = calls * per_call
        figures[name] = {
            "opcodes": sum(opcodes.values()) / n,
            "calls": sum(entered.values()) / n,
            "functions": [
                {"function": f, "opcodes": c / n, "calls": entered[f] / n}
                for f, c in opcodes.most_common(top)
            ],
        }
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pair_opcodes", description=__doc__)
    parser.add_argument("which", nargs="*", default=list(DEFAULT_PAIRS))
    parser.add_argument("--pairs", type=int, default=20, help="pairs traced (default 20)")
    parser.add_argument("--top", type=int, default=25, help="functions listed (default 25)")
    parser.add_argument("--json-only", action="store_true")
    args = parser.parse_args(argv)
    check_pair_names(parser, args.which)
    if hot_path_build() != PYTHON:
        parser.error("kproxy's hot path is compiled here: its functions run no bytecode")
    figures = measure(args.which, args.pairs, args.top)
    if args.json_only:
        print(json.dumps(figures))
        return 0
    for name, figure in figures.items():
        assert isinstance(figure, dict)
        print(f"{name}: {figure['opcodes']:,.0f} opcodes and {figure['calls']:.0f} calls a pair")
        for row in figure["functions"]:
            print(f"  {row['opcodes']:7.1f} {row['calls']:4.1f}  {row['function']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
