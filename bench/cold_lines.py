"""The cache lines kproxy's own Python brings in from memory per pair, counted:

    python -m bench.cold_lines [--pairs 1000] [--compiled] [WHICH ...]

`bench.cold_pairs` times a pair right after its caches were emptied, and its repeats
spread by up to a fifth on these shared machines: it cannot tell two revisions a few
percent apart. This bench counts what that time is made of. valgrind's cachegrind
simulates the caches (32 KiB first-level, 1 MiB last-level), a 2 MiB buffer is written
before each pair (`bench.cold_pairs.evict`), and every line the pair misses in the last
level is one it fetched from memory: the code (the interpreter's, or the compiled
module's) and the data (objects, code objects, tables) it touches. A run of N evicted
pairs less a run of N evictions alone, after the same warm-up, gives the count per pair;
it does not move with the machine's neighbours.

On 2026-12-02 the small Fetch pair (``runtime-fetch-small``) fetched about 1,300 lines in
pure Python and the yardstick (``least``) about 850; cold, they took about 25 and 10 us
(`bench.cold_pairs`), of the order of 10-20 ns a line. So a change that touches fewer
objects and functions shows here when the timings cannot resolve it
(docs/performance.md, "Lines from memory").

WHICH names pairs of `bench.session_pairs` (default: ``runtime`` and
``runtime-fetch-small``). ``--compiled`` counts a mypyc build of this source as well.
It needs valgrind (``apt-get install valgrind``); each pair takes about a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

from bench.ab import json_from_compiled_copy
from bench.cold_pairs import DEFAULT_PAIRS, evict
from bench.session_pairs import PAIRS_PER_CALL, check_pair_names, warmed_pairs
from kproxy.observe.build_info import COMPILED, hot_path_build

LL_BYTES = 1 << 20
# First-level caches as this host's, a last level small enough that a 2 MiB write
# empties it: what the pair then misses there it fetched from memory.
CACHES = ("--I1=32768,8,64", "--D1=32768,8,64", f"--LL={LL_BYTES},16,64")
WARM_UP = 300
# Each count by the name cachegrind's summary gives it.
COUNTS = {
    "instructions": "I   refs",
    "code_lines": "LLi misses",
    "data_lines": "LLd misses",
    "l1_code_misses": "I1  misses",
    "l1_data_misses": "D1  misses",
}


def run_evicted(which: str, pairs: int, with_pairs: bool) -> None:
    """Warm up, then `pairs` evictions, each followed by a pair of `which` (or not):
    the process cachegrind counts."""
    buffer = bytearray(2 * LL_BYTES)
    for _, run, _ in warmed_pairs([which], WARM_UP):
        for _ in range(pairs):
            evict(buffer)
            if with_pairs:
                run()


def parse_summary(stderr: str) -> dict[str, int]:
    """The counts of cachegrind's closing summary, by the names of `COUNTS`."""
    counts: dict[str, int] = {}
    for name, label in COUNTS.items():
        found = re.search(rf"{re.escape(label)}:\s+([\d,]+)", stderr)
        if found is None:
            raise RuntimeError(f"no {label!r} in cachegrind's summary: {stderr[-800:]}")
        counts[name] = int(found.group(1).replace(",", ""))
    return counts


def cachegrind_run(which: str, pairs: int, with_pairs: bool) -> subprocess.Popen[str]:
    """`run_evicted` under cachegrind, started."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("bench.cold_lines needs valgrind (apt-get install valgrind)")
    argv = [valgrind, "--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=/dev/null",
            *CACHES, sys.executable, "-m", "bench.cold_lines", "--run-evicted", which,
            str(pairs), str(int(with_pairs))]  # fmt: skip
    # One hash seed: the same dicts laid out the same way in both runs.
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip


def counts_of(proc: subprocess.Popen[str]) -> dict[str, int]:
    _, stderr = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"cachegrind exited with {proc.returncode}: {stderr[-1500:]}")
    return parse_summary(stderr)


def per_pair(which: str, pairs: int) -> dict[str, float]:
    """Each count of `COUNTS` for one pair of `which`: evicted pairs less evictions (the
    two runs side by side: the counts do not depend on what else runs)."""
    both, alone = cachegrind_run(which, pairs, True), cachegrind_run(which, pairs, False)
    with_pairs, without = counts_of(both), counts_of(alone)
    calls = pairs * PAIRS_PER_CALL.get(which, 1)
    return {name: (with_pairs[name] - without[name]) / calls for name in COUNTS}


def measure(which: list[str], pairs: int) -> dict[str, object]:
    counts = {name: per_pair(name, pairs) for name in which}
    return {"per_pair": counts, "compiled": hot_path_build() == COMPILED}


def _report(result: dict[str, object]) -> None:
    kind = "compiled" if result["compiled"] else "pure Python"
    figures = result["per_pair"]
    assert isinstance(figures, dict)
    for name, c in figures.items():
        lines = c["code_lines"] + c["data_lines"]
        print(
            f"{name}: {lines:,.0f} lines from memory a pair ({c['code_lines']:,.0f} of code,"
            f" {c['data_lines']:,.0f} of data); first level: {c['l1_code_misses']:,.0f} code,"
            f" {c['l1_data_misses']:,.0f} data misses; {c['instructions']:,.0f} instructions"
            f" ({kind})"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("which", nargs="*", default=list(DEFAULT_PAIRS))
    ap.add_argument("--pairs", type=int, default=1000, help="evicted pairs counted")
    ap.add_argument("--compiled", action="store_true", help="also count a mypyc build")
    ap.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--run-evicted", nargs=3, metavar=("WHICH", "N", "PAIRS"),
                    help=argparse.SUPPRESS)  # fmt: skip
    args = ap.parse_args(argv)
    check_pair_names(ap, args.which)
    if args.run_evicted:
        which, pairs, with_pairs = args.run_evicted
        run_evicted(which, int(pairs), with_pairs == "1")
        return 0
    here = measure(args.which, args.pairs)
    if args.json_only:
        print(json.dumps(here))
        return 0
    _report(here)
    if args.compiled:
        built = json_from_compiled_copy(
            ["bench.cold_lines", "--pairs", str(args.pairs), "--json-only", *args.which]
        )
        assert built["compiled"], "the mypyc build was not the one imported"
        _report(built)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
