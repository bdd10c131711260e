"""What kproxy's own Python costs per pair when its caches start cold:

    python -m bench.cold_pairs [--pairs 1500] [--repeat 3] [--compiled] [WHICH ...]

`bench.session_bench` times a pair thousands of times in a row, with every cache warm.
Live, kproxy wakes once for a request and once for its response, and between two
wakeups the client and the broker run on the same cores and push kproxy's code and
objects out of the caches. This bench writes a buffer larger than the last-level cache
before each pair (`evict`), then times that one pair: the median of ``--pairs`` such
pairs, ``--repeat`` times. A change that touches fewer objects and functions shows
here even when it saves few instructions.

On 2026-12-02 the small Fetch pair (``runtime-fetch-small``) took 4.5 us in a tight
loop and 24.5 us here in pure Python, 1.0 and 7.6 compiled; live, a consumer's Fetch
pair cost about 14 and 10 us of CPU over the Python floor's (docs/performance.md). So
the live cost is of this figure's order, not the tight loop's. It is not this figure:
the live caches are only partly cold, and the compiled build's live cost is above it
for reasons not found. The repeats spread by up to a fifth on this host: compare
revisions over several runs.

WHICH names pairs of `bench.session_pairs` (default: ``runtime`` and
``runtime-fetch-small``). ``--compiled`` measures a mypyc build of this source as
well, in a subprocess, as `bench.session_bench --compiled` does. Not a test: there are
no timed assertions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

from bench.ab import json_from_compiled_copy
from bench.session_pairs import check_pair_names, warmed_pairs
from kproxy.observe.build_info import COMPILED, hot_path_build

DEFAULT_PAIRS = ("runtime", "runtime-fetch-small")
# Written before each pair: more than the last-level cache of the machines here (32 MiB
# of L3), at one byte a cache line.
EVICT_BYTES = 48 << 20
_LINE = 64


def evict(buffer: bytearray) -> None:
    """Write one byte of every cache line of `buffer`: what was cached before is gone."""
    lines = len(buffer) // _LINE
    ones = _ONES.get(lines)
    if ones is None:  # made once: a pair should not have to push its making out too
        ones = _ONES[lines] = b"\x01" * lines
    buffer[::_LINE] = ones


_ONES: dict[int, bytes] = {}


def cold_us_per_pair(run: Callable[[], object], pairs: int, buffer: bytearray) -> float:
    """The median time of one call of `run` right after `evict`, in microseconds."""
    clock = time.perf_counter
    times = []
    for _ in range(pairs):
        evict(buffer)
        start = clock()
        run()
        times.append(clock() - start)
    return statistics.median(times) * 1e6


def measure(which: list[str], pairs: int, repeat: int) -> dict[str, object]:
    buffer = bytearray(EVICT_BYTES)
    figures: dict[str, list[float]] = {}
    for name, run, per_call in warmed_pairs(which):
        figures[name] = [cold_us_per_pair(run, pairs, buffer) / per_call for _ in range(repeat)]
    return {"us_per_pair": figures, "compiled": hot_path_build() == COMPILED}


def measure_compiled(which: list[str], pairs: int, repeat: int) -> dict[str, object]:
    """The same, on a mypyc build of this source in a temporary copy."""
    return json_from_compiled_copy(
        ["bench.cold_pairs", "--pairs", str(pairs), "--repeat", str(repeat), "--json-only", *which]
    )


def _report(result: dict[str, object]) -> None:
    kind = "compiled" if result["compiled"] else "pure Python"
    figures = result["us_per_pair"]
    assert isinstance(figures, dict)
    for name, runs in figures.items():
        shown = " ".join(f"{us:.2f}" for us in runs)
        print(f"{name}: {statistics.median(runs):.2f} us a pair, caches cold ({kind}; {shown})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("which", nargs="*", default=list(DEFAULT_PAIRS))
    ap.add_argument("--pairs", type=int, default=1500, help="pairs timed per figure")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--compiled", action="store_true", help="also measure a mypyc build")
    ap.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    check_pair_names(ap, args.which)
    here = measure(args.which, args.pairs, args.repeat)
    if args.json_only:
        print(json.dumps(here))
        return 0
    _report(here)
    if args.compiled:
        built = measure_compiled(args.which, args.pairs, args.repeat)
        assert built["compiled"], "the mypyc build was not the one imported"
        _report(built)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
