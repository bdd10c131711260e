"""The benchmark harness's arithmetic: medians, spreads, per-round ratios and verdicts.

The figures in bench/RESULTS.md are only as good as this code, so it is pinned on
hand-computed values and against numpy's percentile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import report
from bench.stats import interleave, median, percentile, ratio_summary, round_order, summarize


def test_median_odd_and_even() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    with pytest.raises(ValueError):
        median([])


# No deadline: the first example imports numpy, which on a loaded machine takes longer
# than hypothesis's default 200 ms.
@settings(deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=50),
    st.floats(0, 100),
)
def test_percentile_is_numpys_linear(values: list[float], q: float) -> None:
    np = pytest.importorskip("numpy")
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), abs=1e-6)


def test_summary_skips_failed_runs_and_never_reports_zero() -> None:
    s = summarize([10.0, None, 30.0, 20.0])
    assert (s["n"], s["median"], s["min"], s["max"]) == (3, 20.0, 10.0, 30.0)
    assert summarize([None, None])["median"] is None


def test_ratio_is_taken_per_round_against_the_same_rounds_direct() -> None:
    # Round 2 ran on a slower machine state: both halved. The per-round ratio is still
    # 0.9, where a ratio of medians would mix the rounds.
    kproxy = [90.0, 45.0, 90.0]
    direct = [100.0, 50.0, 100.0]
    r = ratio_summary(kproxy, direct)
    assert r["n"] == 3
    assert r["median"] == pytest.approx(0.9)
    assert r["min"] == pytest.approx(0.9) and r["max"] == pytest.approx(0.9)
    # A round missing on either side is left out, not counted as zero.
    assert ratio_summary([90.0, None, 80.0], [100.0, 50.0, None])["n"] == 1


def test_interleaved_order_alternates_all_but_direct() -> None:
    assert interleave(["direct", "b", "c", "d"], 3) == [
        (0, "direct"),
        (0, "b"),
        (0, "c"),
        (0, "d"),
        (1, "direct"),
        (1, "d"),
        (1, "c"),
        (1, "b"),
        (2, "direct"),
        (2, "b"),
        (2, "c"),
        (2, "d"),
    ]


def test_over_two_rounds_every_proxy_runs_before_and_after_every_other() -> None:
    paths = ["direct", "haproxy", "kproxy-uvloop", "kproxy-compiled", "kproxy-base"]
    orders = [round_order(paths, r) for r in (0, 1)]
    for a in paths[1:]:
        for b in paths[1:]:
            if a != b:
                assert {o.index(a) < o.index(b) for o in orders} == {True, False}
    assert all(o[0] == "direct" for o in orders)


def _results(kproxy: list[float], direct: list[float], haproxy: list[float]) -> dict[str, Any]:
    """Produce throughput per round; CPU per GB: kproxy 1.2 s, haproxy 1.0 s."""
    runs = []
    for r, (k, d, h) in enumerate(zip(kproxy, direct, haproxy, strict=True)):
        for path, v, cpu in (("direct", d, None), ("haproxy", h, 1.0), ("kproxy-uvloop", k, 1.2)):
            run: dict[str, Any] = {"round": r, "path": path, "ok": True, "result": {"msg_per_s": v}}
            if cpu is not None:
                run["proxy"] = {"cpu_s_per_gb_payload": cpu}
            runs.append(run)
    status = {"tansu": "ok"}
    return {
        "meta": {"rounds": len(kproxy)},
        "paths": {p: {"status": status} for p in ("direct", "haproxy", "kproxy-uvloop")},
        "workloads": {
            "produce-1KiB": {
                "upstream": "tansu",
                "kind": "produce",
                "target": "throughput",
                "runs": runs,
            }
        },
    }


def test_targets_met_and_missed() -> None:
    from bench.targets import evaluate_targets, met_share

    met = evaluate_targets(_results([96, 97, 99], [100, 100, 100], [95, 96, 99]))
    by_target = {v.target: v for v in met}
    assert by_target["produce-1KiB (kproxy-uvloop): throughput >= 0.95 of direct"].status == "met"
    below = "produce-1KiB (kproxy-uvloop): not below haproxy's ratio by more than 0.05"
    assert by_target[below].status == "met"
    cpu = "produce-1KiB (kproxy-uvloop): CPU per GB <= 1.3x haproxy's"
    assert by_target[cpu].status == "met" and "1.20x" in by_target[cpu].measured
    assert met_share(met) == "3 of 3 targets met (100%)"

    missed = evaluate_targets(_results([80, 85, 99], [100, 100, 100], [95, 96, 99]))
    by_target = {v.target: v for v in missed}
    assert by_target["produce-1KiB (kproxy-uvloop): throughput >= 0.95 of direct"].status == (
        "missed"
    )
    assert by_target[below].status == "missed"


def test_a_paired_runs_cpu_per_gb_is_shown_but_not_judged() -> None:
    """Paired turns start and end with the client's pipeline empty, which raises the
    proxies' CPU per byte unevenly: the throughput targets stand, the CPU one is not
    judged there."""
    from bench.targets import evaluate_targets, met_share

    results = _results([96, 97, 99], [100, 100, 100], [95, 96, 99])
    results["meta"]["paired_segments"] = 20
    by_target = {v.target: v for v in evaluate_targets(results)}
    cpu = by_target["produce-1KiB (kproxy-uvloop): CPU per GB <= 1.3x haproxy's"]
    assert cpu.status == "not measured"
    assert cpu.measured == "1.20 vs haproxy 1.00 s/GB (1.20x); paired"
    assert by_target["produce-1KiB (kproxy-uvloop): throughput >= 0.95 of direct"].status == "met"
    assert met_share(list(by_target.values())) == "2 of 2 targets met (100%)"


def test_results_page_names_its_command_and_its_json(tmp_path: Path) -> None:
    results = _results([95, 92, 97], [100, 100, 100], [40, 45, 41])
    results["meta"] = {"mode": "full", "rounds": 3, "argv": ["run", "--scale", "2"]}
    md = tmp_path / "RESULTS.md"
    report.write_outputs(results, md, tmp_path / "results.json")
    page = md.read_text()
    assert "Generated by `python -m bench run --scale 2` (full mode, 3 interleaved" in page
    assert f"`python -m bench report {tmp_path / 'results.json'}`" in page


def test_results_page_says_how_the_rounds_were_ordered(tmp_path: Path) -> None:
    results = _results([95, 92, 97], [100, 100, 100], [40, 45, 41])
    md = tmp_path / "RESULTS.md"
    results["meta"] = {"mode": "full", "rounds": 3, "argv": ["run"], "order": "alternating"}
    report.write_outputs(results, md, tmp_path / "results.json")
    assert "A B C D, A D C B, ..." in md.read_text()
    # A run recorded before the order was written down kept one order throughout.
    del results["meta"]["order"]
    report.write_outputs(results, md, tmp_path / "results.json")
    assert "the same order every round: A B C D A B C D ..." in md.read_text()


def test_notes_written_by_hand_on_a_run_survive_its_re_render_only(tmp_path: Path) -> None:
    results = _results([95, 92, 97], [100, 100, 100], [40, 45, 41])
    results["meta"] = {"mode": "full", "rounds": 3, "argv": ["run"], "started": "T1"}
    md = tmp_path / "RESULTS.md"
    report.write_outputs(results, md, tmp_path / "results.json")
    notes = "<!-- notes on the run started T1 -->\nThe host was quiet.\n<!-- /notes -->"
    counted = "targets met (100%); see `bench/targets.py`.\n"
    page = md.read_text().replace(counted, f"{counted}\n{notes}\n", 1)
    md.write_text(page)
    report.write_outputs(results, md, tmp_path / "results.json")
    assert md.read_text() == page  # `bench report` of the same run: nothing lost or moved
    results["meta"]["started"] = "T2"  # another run written over the page
    report.write_outputs(results, md, tmp_path / "results.json")
    assert "The host was quiet." not in md.read_text()
