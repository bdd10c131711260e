"""`python -m bench ab WORKLOAD --paired N`: the paths of a round take turns, the order
changed every turn (balanced: `turn_order`), each path doing exactly its count of
messages; only workloads whose paths can share a round are paired, and the rounds are
recorded as `bench.harness` records them (so the summary reads them unchanged)."""

from __future__ import annotations

import argparse
import collections
import itertools
from pathlib import Path
from typing import Any

import pytest

import bench.catalog
import bench.harness
from bench.ab import add_arguments, main_ab
from bench.catalog import workloads
from bench.paired import pairable
from bench.turns import each_turn, turn_order


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8])
def test_the_order_is_balanced_and_no_path_has_two_turns_in_a_row(n: int) -> None:
    """Over a cycle of turns every path leads as often as any other and follows every
    other path as often as any other (so that no path always meets what the same one left
    behind), and no path ever has two turns in a row."""
    paths = [f"p{i}" for i in range(n)]
    cycle = n if n % 2 == 0 else 2 * n
    turns = [turn_order(paths, t) for t in range(3 * cycle)]
    for order in turns:
        assert sorted(order) == paths
    played = [p for order in turns for p in order]
    if n >= 2:
        assert all(a != b for a, b in itertools.pairwise(played))
    if n >= 3:
        assert turns[cycle:] == turns[:-cycle]
        one_cycle = turns[:cycle]
        assert sorted(order[0] for order in one_cycle) == sorted(paths * (cycle // n))
        followed = collections.Counter(
            pair for order in one_cycle for pair in itertools.pairwise(order)
        )
        assert len(followed) == n * (n - 1)
        assert set(followed.values()) == {cycle // n}


@pytest.mark.parametrize(("count", "segments"), [(1000, 10), (1001, 10), (7, 3), (5, 8)])
def test_every_path_does_its_count_in_turns_that_alternate(count: int, segments: int) -> None:
    targets = [["direct", "b1", "t1"], ["haproxy", "b2", "t2"], ["kproxy-uvloop", "b3", "t3"]]
    seen: list[tuple[str, str, int]] = []

    def turn(path: str, topic: str, n: int) -> float:
        seen.append((path, topic, n))
        return float(n)

    args = argparse.Namespace(count=count, segments=segments)
    values = each_turn(args, targets, turn)
    for path, _bootstrap, topic in targets:
        mine = [n for p, t, n in seen if p == path and t == topic]
        assert sum(mine) == count
        assert values[path] == [float(n) for n in mine]
        assert len(mine) <= segments
    # Turn by turn, the order of `turn_order`.
    order = [p for p, _t, _n in seen]
    assert order[:3] == ["direct", "haproxy", "kproxy-uvloop"]
    if len(order) >= 6:
        assert order[3:6] == ["haproxy", "kproxy-uvloop", "direct"]


def by_name(name: str) -> bench.catalog.Workload:
    return next(w for w in workloads(quick=False) if w.name == name)


@pytest.mark.parametrize(
    "name",
    ["latency", "kafka-produce-1KiB", "produce-1KiB", "consume-1KiB", "kafka-consume-1KiB"],
)
def test_workloads_whose_paths_can_share_a_round_are_paired(name: str) -> None:
    assert pairable(by_name(name)) is None


@pytest.mark.parametrize(
    ("name", "why"),
    [("connections", "latency, produce and consume workloads only")],
)
def test_other_workloads_are_refused_before_anything_starts(
    name: str, why: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert why in (pairable(by_name(name)) or "")
    monkeypatch.setattr(bench.harness.Harness, "run", lambda self: pytest.fail("started"))
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args([name, "--paired", "5", "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match=why):
        main_ab(args)


def record(path: str, r: int, p99: float) -> dict[str, Any]:
    result = {"p50_ms": p99 / 2, "p99_ms": p99, "messages": 1000}
    return {"round": r, "path": path, "ok": True, "result": result,
            "proxy": {"cpu_seconds": 0.05, "cpu_user_seconds": 0.01}}  # fmt: skip


def test_a_full_run_leaves_the_workloads_it_cannot_pair_to_run_one_path_after_another(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`python -m bench run --paired N`: the idle connections run as without it."""
    from bench.paired import PairedHarness

    unpaired: list[str] = []
    monkeypatch.setattr(
        bench.harness.Harness,
        "run_workload",
        lambda self, wl, up, proxies: unpaired.append(wl.name),
    )
    paired: list[str] = []
    monkeypatch.setattr(
        PairedHarness,
        "_paired_round",
        lambda self, wl, up, proxies, r: paired.append(wl.name) or [],
    )
    opts = bench.harness.Options(
        workdir=tmp_path, out_json=tmp_path / "results.json", out_md=None, rounds=1
    )
    harness = PairedHarness(opts, 4)
    harness.results["workloads"] = {"latency": {"runs": []}, "produce-1KiB": {"runs": []}}
    for name in ("connections", "latency", "produce-1KiB"):
        harness.run_workload(by_name(name), None, {})  # type: ignore[arg-type]
    assert unpaired == ["connections"]
    assert paired == ["latency", "produce-1KiB"]


@pytest.mark.parametrize(
    ("upstream", "own"),
    [("tansu", ("kproxy-uvloop", "kproxy-asyncio")), ("kafka", ())],
)
def test_on_tansu_each_proxy_path_has_a_broker_of_its_own(
    upstream: str, own: tuple[str, ...], tmp_path: Path
) -> None:
    """Direct and haproxy have their sides already; every other proxy path's turns fill
    a Tansu broker of its own, so all fill at one pace."""
    from bench.paired import PairedHarness

    opts = bench.harness.Options(
        workdir=tmp_path,
        out_json=tmp_path / "results.json",
        out_md=None,
        paths=["direct", "haproxy", "kproxy-uvloop", "kproxy-asyncio"],
    )
    up = PairedHarness(opts, 4)._make_upstream(upstream)
    assert up.own_broker_paths == own
    assert bench.harness.Harness(opts)._make_upstream("tansu").own_broker_paths == ()


@pytest.mark.parametrize(
    ("flags", "latency", "consume"), [(["--paired"], 200, 10), (["--paired", "7"], 7, 7)]
)
def test_turns_are_each_kinds_default_unless_given(
    flags: list[str], latency: int, consume: int, tmp_path: Path
) -> None:
    from bench.paired import PairedHarness

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["latency", *flags])
    opts = bench.harness.Options(workdir=tmp_path, out_json=tmp_path / "results.json", out_md=None)
    harness = PairedHarness(opts, args.paired)
    assert harness.turns(by_name("latency")) == latency
    assert harness.turns(by_name("consume-1KiB")) == consume
    recorded = harness.results["meta"]["paired_segments"]
    assert recorded == (7 if latency == 7 else {"latency": 200, "produce": 20, "consume": 10})
