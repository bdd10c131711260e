"""The order in which the paths of a paired round take their turns, and the turns
themselves: every path's client runs in one process (`bench.clients`), the paths taking
turns in short segments, the order changed at every turn, so that a slow spell of the
machine's neighbours falls on every path alike."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable


def turn_order(paths: list[str], turn: int) -> list[str]:
    """The paths in the order of turn `turn`, from a cycle of orders in which every path
    leads a turn as often as any other, follows every other path as often as any other,
    and never has two turns in a row.

    Rotated by one every turn instead (A B C, B C A, ...), each path always followed the
    same one, and what a turn leaves behind (a broker still busy, caches) fell on the
    same path every time: in one paired A/B run of produce-1KiB with the same code on
    both sides, the path that always followed the compiled build used 4% less CPU per
    message in every round, though not in a second run (docs/performance.md, "One
    request in flight"). Reversed every turn, the order gave the paths at its ends a
    second turn straight after their first at every other turn; in a trial on
    consume-1KiB those two paths, direct and one kproxy, read at 0.96-0.99 of each other
    while the two in the middle made 0.61, the turns then timed from the resume, its
    wait for the first batch included. Two paths simply alternate."""
    cycle = _turn_cycle(len(paths))
    return [paths[i] for i in cycle[turn % len(cycle)]]


@functools.cache
def _turn_cycle(n: int) -> tuple[tuple[int, ...], ...]:
    """The orders of `turn_order` for `n` paths: a Williams design (each order a row of a
    Latin square whose rows put every path right after every other once; for an odd `n`
    the rows and their mirrors, twice), its rows arranged so that no turn starts with
    the path that ended the turn before, the cycle's last and first turns included."""
    if n <= 2:
        return (tuple(range(n)),)
    first, low, high = [0], 1, n - 1
    while len(first) < n:
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    rows = [tuple((p + shift) % n for p in first) for shift in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    cycle = _chained(rows[:1], rows[1:])
    if cycle is None:
        raise ValueError(f"no order of turns for {n} paths without a path twice in a row")
    return tuple(cycle)


def _chained(
    chain: list[tuple[int, ...]], left: list[tuple[int, ...]]
) -> list[tuple[int, ...]] | None:
    """`chain` continued with every row of `left`, no row starting with the path the row
    before it ended with, the last row not ending with the path the first starts with."""
    if not left:
        return chain if chain[-1][-1] != chain[0][0] else None
    for i, row in enumerate(left):
        if row[0] != chain[-1][-1]:
            found = _chained([*chain, row], left[:i] + left[i + 1 :])
            if found is not None:
                return found
    return None


def each_turn(
    args: argparse.Namespace, targets: list[list[str]], turn: Callable[[str, str, int], float]
) -> dict[str, list[float]]:
    """Run every path's turns in the alternating order; `turn(path, topic, n)` does n
    messages and returns what that turn measured."""
    topics = {path: topic for path, _bootstrap, topic in targets}
    paths = [path for path, _bootstrap, _topic in targets]
    per_turn = -(-args.count // args.segments)
    values: dict[str, list[float]] = {path: [] for path in paths}
    left = dict.fromkeys(paths, args.count)
    for segment in range(args.segments):
        for path in turn_order(paths, segment):
            n = min(per_turn, left[path])
            if n > 0:
                values[path].append(turn(path, topics[path], n))
                left[path] -= n
    return values
