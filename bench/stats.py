"""Pure statistics and scheduling for the benchmark harness (no I/O, no peers).

Every figure the harness reports is the median of N interleaved repetitions, with its
spread (min-max, and the interquartile range when N >= 4), and its ratio to the
direct path measured in the same run. The ratio is taken per round (path / direct of
the same round) and summarised the same way, so that drift during a run (thermal,
page cache, a noisy neighbour) cancels out as far as it can.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "interleave",
    "median",
    "percentile",
    "ratio_summary",
    "round_order",
    "round_ratios",
    "summarize",
]


def median(values: Sequence[float]) -> float:
    """The median (mean of the two middle values for an even count)."""
    if not values:
        raise ValueError("median of no values")
    s = sorted(values)
    n = len(s)
    mid = n // 2
    if n % 2:
        return float(s[mid])
    return (s[mid - 1] + s[mid]) / 2.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear interpolation between closest ranks
    (numpy's default, "linear")."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} outside 0..100")
    s = sorted(values)
    if len(s) == 1:
        return float(s[0])
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return float(s[lo])
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(values: Iterable[float | None]) -> dict[str, Any]:
    """Median, min, max, IQR (q1, q3) and n of the values that are not None.

    Returns ``{"n": 0, "median": None, ...}`` when nothing was measured, so a failed
    run shows as a gap, never as a zero."""
    got = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not got:
        return {"n": 0, "median": None, "min": None, "max": None, "q1": None, "q3": None}
    return {
        "n": len(got),
        "median": median(got),
        "min": min(got),
        "max": max(got),
        "q1": percentile(got, 25.0),
        "q3": percentile(got, 75.0),
        "values": got,
    }


def round_ratios(
    values: Sequence[float | None], baseline: Sequence[float | None]
) -> list[float | None]:
    """Per-round ratios ``values[i] / baseline[i]``; None where either side is missing
    (or the baseline is 0)."""
    return [
        None if v is None or b is None or b == 0 else v / b
        for v, b in zip(values, baseline, strict=False)
    ]


def ratio_summary(
    values: Sequence[float | None], baseline: Sequence[float | None]
) -> dict[str, Any]:
    """:func:`round_ratios` summarised with :func:`summarize` (missing rounds skipped)."""
    return summarize(round_ratios(values, baseline))


# How the harness orders each round's paths (round_order). A run's meta records it;
# runs recorded without it kept the given order in every round.
ORDER = "alternating"


def round_order(paths: Sequence[str], r: int) -> list[str]:
    """The paths of round ``r`` in the order they run. The first (direct: every ratio is
    taken against it) leads every round; the rest run as given in even rounds and in
    reverse in odd ones (A B C D, A D C B, ...). Over two rounds each path then runs both
    before and after every other, so that whatever a place in the round brings (the
    machine still busy with the path before, sockets of the previous run closing) falls
    on both sides of an A/B."""
    first, rest = list(paths[:1]), list(paths[1:])
    return first + (rest if r % 2 == 0 else rest[::-1])


def interleave(paths: Sequence[str], rounds: int) -> list[tuple[int, str]]:
    """The run order: every path once per round (:func:`round_order`), rounds one after
    the other. Returns ``[(round, path), ...]``."""
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    return [(r, p) for r in range(rounds) for p in round_order(paths, r)]
