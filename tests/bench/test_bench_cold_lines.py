"""`bench.cold_lines`: cachegrind's summary read, each counted pair preceded by an
eviction, and a pair's count the evicted pairs' run less the evictions' run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench import cold_lines, session_pairs

# The closing summary of `valgrind --tool=cachegrind --cache-sim=yes` (3.19).
SUMMARY = """\
==7340== I   refs:      2,723,272,228
==7340== I1  misses:       31,800,846
==7340== LLi misses:          635,855
==7340== I1  miss rate:          1.17%
==7340== LLi miss rate:          0.02%
==7340==
==7340== D   refs:      1,251,466,229  (845,204,880 rd   + 406,261,349 wr)
==7340== D1  misses:       35,633,924  ( 24,902,578 rd   +  10,731,346 wr)
==7340== LLd misses:       13,973,407  (  5,819,863 rd   +   8,153,544 wr)
"""


def test_the_summary_is_read_by_name() -> None:
    assert cold_lines.parse_summary(SUMMARY) == {
        "instructions": 2_723_272_228,
        "code_lines": 635_855,
        "data_lines": 13_973_407,
        "l1_code_misses": 31_800_846,
        "l1_data_misses": 35_633_924,
    }
    with pytest.raises(RuntimeError, match="LLd misses"):
        cold_lines.parse_summary(SUMMARY.replace("LLd", "LLx"))


@pytest.mark.parametrize("with_pairs", [True, False])
def test_each_counted_pair_follows_an_eviction(
    monkeypatch: pytest.MonkeyPatch, with_pairs: bool
) -> None:
    order: list[str] = []
    monkeypatch.setattr(cold_lines, "WARM_UP", 2)
    monkeypatch.setattr(cold_lines, "evict", lambda buffer: order.append("evict"))
    # The pair is built where `warmed_pairs` builds it.
    monkeypatch.setattr(
        session_pairs, "pair_builders", lambda events: {"p": lambda: lambda: order.append("pair")}
    )
    cold_lines.run_evicted("p", 3, with_pairs)
    assert order == ["pair"] * 2 + (["evict", "pair"] if with_pairs else ["evict"]) * 3


def test_a_pair_counts_what_its_run_adds_to_the_evictions(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runs: list[tuple[str, int, bool]] = []

    def run(which: str, pairs: int, with_pairs: bool) -> Any:
        runs.append((which, pairs, with_pairs))
        return with_pairs

    def counts(with_pairs: Any) -> dict[str, int]:
        base = {name: 1_000_000 for name in cold_lines.COUNTS}
        return {name: n + (3_000 if with_pairs else 0) for name, n in base.items()}

    monkeypatch.setattr(cold_lines, "cachegrind_run", run)
    monkeypatch.setattr(cold_lines, "counts_of", counts)
    assert cold_lines.main(["--pairs", "10", "--json-only", "runtime-pipelined"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert sorted(runs) == [("runtime-pipelined", 10, False), ("runtime-pipelined", 10, True)]
    # Three pairs a call there (bench.session_pairs.PAIRS_PER_CALL).
    assert result["per_pair"]["runtime-pipelined"] == {name: 100.0 for name in cold_lines.COUNTS}
    assert isinstance(result["compiled"], bool)


def test_the_counted_process_runs_the_named_pair() -> None:
    # The process cachegrind runs, without cachegrind: a few evicted pairs, no error.
    assert cold_lines.main(["--run-evicted", "runtime", "2", "1"]) == 0


def test_an_unknown_pair_is_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(*args: object) -> Any:
        raise AssertionError("cachegrind started for an unknown pair")

    monkeypatch.setattr(cold_lines, "cachegrind_run", run)
    with pytest.raises(SystemExit) as exit_:
        cold_lines.main(["runtime", "no-such-pair"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "no pair named no-such-pair" in err and "runtime-fetch-small" in err
