"""`bench.pair_opcodes`: the bytecode a pair runs, counted function by function."""

from __future__ import annotations

import json

import pytest

from bench import pair_opcodes


def _twice(n: int) -> int:
    return n * 2


def test_opcodes_and_calls_are_counted_by_function() -> None:
    def run() -> int:
        return _twice(1) + _twice(2)

    opcodes, calls = pair_opcodes.count(run, 3)
    twice = next(name for name in calls if name.endswith(":_twice"))
    assert twice.startswith("tests/bench/test_bench_pair_opcodes.py:")
    assert calls[twice] == 6
    assert opcodes[twice] > 0 and opcodes[twice] % 6 == 0  # the same opcodes each call
    assert sum(calls.values()) == 9  # run itself, three times


# It traces bytecode: a compiled build's pair runs none.
@pytest.mark.pure_python
def test_a_pair_is_counted_per_pair(capsys: pytest.CaptureFixture[str]) -> None:
    assert pair_opcodes.main(["--pairs", "4", "--json-only", "least"]) == 0
    least = json.loads(capsys.readouterr().out)["least"]
    # run, the request, the response, the scan and two writes: six calls a pair.
    assert least["calls"] == 6
    scanned = [row for row in least["functions"] if "produce_response_is_plain" in row["function"]]
    assert len(scanned) == 1 and scanned[0]["calls"] == 1
    assert least["opcodes"] == pytest.approx(sum(row["opcodes"] for row in least["functions"]))


def test_an_unknown_pair_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        pair_opcodes.main(["no-such-pair"])
    assert exit_.value.code == 2
    assert "no pair named no-such-pair" in capsys.readouterr().err


def test_a_compiled_build_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(pair_opcodes, "hot_path_build", lambda: "compiled")
    with pytest.raises(SystemExit) as exit_:
        pair_opcodes.main(["least"])
    assert exit_.value.code == 2
    assert "run no bytecode" in capsys.readouterr().err
