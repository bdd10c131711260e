"""What kproxy's own Python costs per small request/response pair, without sockets:

    python -m bench.session_bench [--repeat 7] [--compiled]

The sans-IO session (`kproxy.session.ProxySession`) is given a Produce v10 request with
100 B of records and its successful response, both encoded by kio, one pair after the
other: the work kproxy does on every small produce round trip (framing, header, the
in-flight table, the response's scan, the forward) and nothing the kernel does. It is
driven as the runtime drives it, each read offered to the fast lane first
(`kproxy.session.fast_lane`), and again through the general path alone.

The same pair is also measured through the runtime's connection glue as
`kproxy run` builds it (`ClientConnection` and `UpstreamConnection` over the real
services, observer, metrics and event log), with transports that drop what they are
given: everything kproxy's own Python does per round trip except the event loop and the
syscalls. It is measured again with a 300 KB request in three reads, streamed through
the general path (what a batching producer of small records sends), and with three
pairs pipelined: their requests in one read, their responses in another, and with a
Fetch v17 request and its 1 MB response in ten reads, streamed (`runtime-fetch`: what a
consumer's round trip costs kproxy's Python). Beside them,
`bench.least_pair` does the same pair's necessary work in one
function per direction: the least Python such a pair needs, a yardstick for the fast
lane. The pairs themselves are built in `bench.session_pairs`.

``--instructions`` counts instead of timing: the machine instructions one pair takes, as
valgrind's callgrind counts them (a run of N pairs less a run of none, after the same
warm-up). The count does not move with the machine's neighbours, so two revisions
compare to a fraction of a percent where their timings swing by half (it needs
valgrind: ``apt-get install valgrind``; about two minutes).

``--compiled`` also builds the hot path with mypyc (``KPROXY_COMPILE=1``, setup.py) in a
temporary copy of the source and measures it there, in a subprocess, beside the pure
Python figure. Each figure is the median of ``--repeat`` timed runs (each long enough to
last 50 ms). Not a test: there are no timed assertions.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bench.ab import json_from_compiled_copy
from bench.rewrite_bench import seconds_per_call
from bench.session_pairs import (
    FETCH_READS,
    FETCH_RECORD_BYTES,
    LARGE_READS,
    LARGE_RECORD_BYTES,
    PAIRS_PER_CALL,
    PIPELINED,
    SMALL_FETCH_READS,
    SMALL_FETCH_RECORDS,
    events_dir,
    pair_builders,
)
from kproxy.observe.build_info import COMPILED, hot_path_build

REPO = Path(__file__).resolve().parents[1]


def measure(repeat: int) -> dict[str, object]:
    with events_dir() as events:
        builders = pair_builders(Path(events))
        us = {
            which: seconds_per_call(build(), repeat) * 1e6 / PAIRS_PER_CALL.get(which, 1)
            for which, build in builders.items()
        }
    return {
        "us_per_pair": us["session"],
        "general_us_per_pair": us["general"],
        "runtime_us_per_pair": us["runtime"],
        "runtime_large_us_per_pair": us["runtime-large"],
        "runtime_pipelined_us_per_pair": us["runtime-pipelined"],
        "runtime_fetch_us_per_pair": us["runtime-fetch"],
        "runtime_fetch_small_us_per_pair": us["runtime-fetch-small"],
        "runtime_fetch_small_parts_us_per_pair": us["runtime-fetch-small-parts"],
        "least_us_per_pair": us["least"],
        "compiled": hot_path_build() == COMPILED,
    }


_COLLECTED = re.compile(r"Collected : (\d+)")


def _run_pairs(which: str, count: int) -> None:
    """Warm up, then `count` pairs of `which` (the process valgrind counts)."""
    with events_dir() as events:
        run = pair_builders(Path(events))[which]()
        for _ in range(200 + count):
            run()


def instructions_per_pair(which: str, pairs: int = 6000) -> int:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")

    def collected(count: int) -> int:
        argv = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                "-m", "bench.session_bench", "--run-pairs", which, str(count)]  # fmt: skip
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[-4:])} failed: {proc.stderr[-1500:]}")
        found = _COLLECTED.search(proc.stderr)
        if found is None:
            raise RuntimeError(f"no instruction count from callgrind: {proc.stderr[-500:]}")
        return int(found.group(1))

    return (collected(pairs) - collected(0)) // (pairs * PAIRS_PER_CALL.get(which, 1))


def measure_compiled(repeat: int) -> dict[str, object]:
    """The same, on a mypyc build of this source in a temporary copy."""
    return json_from_compiled_copy(["bench.session_bench", "--repeat", str(repeat), "--json-only"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--compiled", action="store_true", help="also measure a mypyc build")
    ap.add_argument(
        "--instructions", action="store_true", help="count instructions (valgrind) instead"
    )
    ap.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--run-pairs", nargs=2, metavar=("WHICH", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.run_pairs:
        _run_pairs(args.run_pairs[0], int(args.run_pairs[1]))
        return 0
    if args.instructions:
        for which in (
            "session",
            "general",
            "runtime",
            "runtime-large",
            "runtime-pipelined",
            "runtime-fetch",
            "runtime-fetch-small",
            "runtime-fetch-small-parts",
            "least",
        ):
            print(f"{which}: {instructions_per_pair(which):,} instructions per pair")
        return 0
    here = measure(args.repeat)
    if args.json_only:
        print(json.dumps(here))
        return 0
    kind = "compiled" if here["compiled"] else "pure Python"
    print(f"session, Produce v10 request + response: {here['us_per_pair']:.2f} us ({kind})")
    print(
        "  the same pair through the general path, no fast lane: "
        f"{here['general_us_per_pair']:.2f} us ({kind})"
    )
    print(
        "runtime glue, observer and metrics included: "
        f"{here['runtime_us_per_pair']:.2f} us ({kind})"
    )
    print(
        f"  a {LARGE_RECORD_BYTES // 1000} KB request in {LARGE_READS} reads (streamed, "
        f"general path): {here['runtime_large_us_per_pair']:.2f} us ({kind})"
    )
    print(
        f"  {PIPELINED} pairs pipelined (their requests in one read, their responses in "
        f"another): {here['runtime_pipelined_us_per_pair']:.2f} us per pair ({kind})"
    )
    print(
        f"  a Fetch v17 request and its {FETCH_RECORD_BYTES // 1000} KB response in "
        f"{FETCH_READS} reads (streamed): {here['runtime_fetch_us_per_pair']:.2f} us ({kind})"
    )
    print(
        f"  a Fetch v17 request and its response of {len(SMALL_FETCH_RECORDS)} partitions, "
        f"{sum(SMALL_FETCH_RECORDS)} B of records, in one read (gathered): "
        f"{here['runtime_fetch_small_us_per_pair']:.2f} us ({kind}); in "
        f"{SMALL_FETCH_READS} reads, as a broker writes it: "
        f"{here['runtime_fetch_small_parts_us_per_pair']:.2f} us"
    )
    print(
        "the least Python a pair needs (bench/least_pair.py, a yardstick, not kproxy): "
        f"{here['least_us_per_pair']:.2f} us"
    )
    if args.compiled:
        built = measure_compiled(args.repeat)
        assert built["compiled"], "the mypyc build was not the one imported"
        pure, fast = float(here["us_per_pair"]), float(built["us_per_pair"])  # type: ignore[arg-type]
        print(f"session, Produce v10 request + response: {fast:.2f} us (mypyc)")
        print(f"  compiled / pure: {fast / pure:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
