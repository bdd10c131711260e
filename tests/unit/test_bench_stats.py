"""The benchmark harness's arithmetic: medians, spreads, per-round ratios and verdicts.

The figures in bench/RESULTS.md are only as good as this code, so it is pinned on
hand-computed values and against numpy's percentile.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import report
from bench.stats import interleave, median, percentile, ratio_summary, summarize


def test_median_odd_and_even() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    with pytest.raises(ValueError):
        median([])


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


def test_interleaved_order() -> None:
    assert interleave(["a", "b", "c"], 2) == [
        (0, "a"),
        (0, "b"),
        (0, "c"),
        (1, "a"),
        (1, "b"),
        (1, "c"),
    ]


def _results(kproxy: list[float], direct: list[float], tansu: list[float]) -> dict[str, Any]:
    runs = []
    for r, (k, d, t) in enumerate(zip(kproxy, direct, tansu, strict=True)):
        for path, v in (("direct", d), ("tansu-proxy", t), ("kproxy-uvloop", k)):
            runs.append({"round": r, "path": path, "ok": True, "result": {"msg_per_s": v}})
    status = {"tansu": "ok"}
    return {
        "meta": {"rounds": len(kproxy)},
        "paths": {p: {"status": status} for p in ("direct", "tansu-proxy", "kproxy-uvloop")},
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
    met = report.evaluate_targets(_results([95, 92, 97], [100, 100, 100], [40, 45, 41]))
    by_target = {v.target: v for v in met}
    assert by_target["produce-1KiB: throughput >= 0.90 of direct"].status == "met"
    assert by_target["produce-1KiB: >= 2x tansu proxy"].status == "met"
    assert by_target["produce-1KiB: above Kroxylicious"].status == "not measured"

    missed = report.evaluate_targets(_results([80, 85, 99], [100, 100, 100], [60, 60, 60]))
    by_target = {v.target: v for v in missed}
    assert by_target["produce-1KiB: throughput >= 0.90 of direct"].status == "missed"
    assert by_target["produce-1KiB: >= 2x tansu proxy"].status == "missed"
