"""`bench.loop_forwarders`: both forwarders carry a client's messages to the echo server
and back on the standard loop, and a run leaves no process behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.loop_forwarders import main, one_run


@pytest.mark.parametrize("mode", ["transports", "raw"])
def test_each_forwarder_carries_round_trips_and_is_timed(mode: str) -> None:
    before = _children()
    got = one_run(mode, 300)
    assert 0 < got["p50_us"] <= got["p99_us"]
    assert got["cpu_us"] >= got["user_us"] >= 0
    assert _children() == before  # the echo server and the forwarder were stopped and reaped


def test_the_summary_names_both_forwarders(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--runs", "1", "--round-trips", "200"]) == 0
    summary = capsys.readouterr().out.split("median of the runs:\n")[1].splitlines()
    assert [line.split()[0] for line in summary] == ["transports", "raw"]


def _children() -> set[str]:
    """This process's children, zombies included, as /proc lists them."""
    tasks = Path("/proc/self/task").iterdir()
    return {pid for task in tasks for pid in (task / "children").read_text().split()}
