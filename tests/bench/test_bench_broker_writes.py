"""`python -m bench broker-writes` refuses counts it cannot measure with, before it
starts a broker: a zero count would divide the broker's CPU by zero messages."""

from __future__ import annotations

import pytest

from bench.__main__ import main


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--count", "0"], "argument --count: must be >= 1: '0'"),
        (["--runs", "-2"], "argument --runs: must be >= 1: '-2'"),
        (["--count", "many"], "argument --count: not an integer: 'many'"),
    ],
)
def test_counts_below_one_are_refused_with_the_reason(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["broker-writes", *argv])
    assert exit_.value.code == 2
    assert said in capsys.readouterr().err
