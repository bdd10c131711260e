"""The machine's cost of a wakeup, across cores and within one, that each benchmark run
records beside the host's steal (bench/wakeup_cost.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import report, wakeup_cost
from bench.wakeup_cost import WakeupCost, halt_poll_ns, ping_pong, wakeup_words


def test_a_round_trip_waits_for_the_partner() -> None:
    """Each round trip waits for the child's answer: a child that spins 2 ms before
    it answers makes every round trip last at least that long. The probe's
    affinity is this process's own again afterwards."""
    before = os.sched_getaffinity(0)
    core = min(before)
    assert ping_pong(core, core, 20, partner_busy_s=0.002) >= 0.002
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_this_machine_is_measured_on_two_cores() -> None:
    cost = wakeup_cost.wakeup_cost(round_trips=200, repeats=1)
    assert cost["across_cores_us"] is not None and cost["across_cores_us"] > 0
    assert cost["same_core_us"] is not None and cost["same_core_us"] > 0


def test_the_figure_is_half_a_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    """A round trip is two wakeups; the median of the repeats is taken; on one core
    there is nothing to measure across."""
    trips = iter([40e-6, 10e-6, 44e-6, 6e-6, 6e-6, 7e-6])
    monkeypatch.setattr(wakeup_cost, "ping_pong", lambda a, b, n: next(trips))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 1})
    cost = wakeup_cost.wakeup_cost(repeats=3)
    assert (cost["across_cores_us"], cost["same_core_us"]) == (20.0, 3.0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1})
    monkeypatch.setattr(wakeup_cost, "ping_pong", lambda a, b, n: 8e-6)
    cost = wakeup_cost.wakeup_cost(repeats=1)
    assert (cost["across_cores_us"], cost["same_core_us"]) == (None, 4.0)


def test_pinning_refused_is_not_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(a: int, b: int, n: int) -> float:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(wakeup_cost, "ping_pong", refused)
    cost = wakeup_cost.wakeup_cost(repeats=1)
    assert (cost["across_cores_us"], cost["same_core_us"]) == (None, None)


def test_the_guests_halt_polling_is_read(tmp_path: Path) -> None:
    setting = tmp_path / "guest_halt_poll_ns"
    setting.write_text("200000\n")
    assert halt_poll_ns(setting) == 200000
    assert halt_poll_ns(tmp_path / "absent") is None
    setting.write_text("not a number\n")
    assert halt_poll_ns(setting) is None


def _cost(across: float | None, same: float | None, poll: int | None) -> WakeupCost:
    return {"across_cores_us": across, "same_core_us": same, "halt_poll_ns": poll}


def test_the_words() -> None:
    start, end = _cost(19.94, 3.1, 0), _cost(21.0, None, 0)
    assert wakeup_words(start, end) == (
        "19.9 / 3.1 us at start, 21.0 / - us at end (an idle vCPU polls 0 ns before it halts)"
    )
    assert wakeup_words(_cost(5.0, 2.0, None), None) == "5.0 / 2.0 us at start, - at end"
    assert wakeup_words(None, None) == "-"


def test_the_results_page_states_it() -> None:
    """A record made before the probe existed says "-"; one made after gives both."""
    empty = {"meta": {}, "machine": {}, "versions": {}, "paths": {}, "workloads": {}}
    row = "| a wakeup across cores / within one (bench/wakeup_cost.py) |"
    assert f"{row} - |" in report.render_markdown(empty, png_name=None)
    measured = dict(empty, machine={"wakeup": _cost(20.0, 3.0, 0), "wakeup_end": None})
    page = report.render_markdown(measured, png_name=None)
    assert f"{row} 20.0 / 3.0 us at start, - at end (an idle vCPU polls 0 ns" in page


def test_an_operator_reads_a_hosts_figures(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m bench.wakeup_cost`, as docs/operations.md ("Sizing") has it run."""
    monkeypatch.setattr(wakeup_cost, "wakeup_cost", lambda: _cost(21.94, 3.3, 0))
    wakeup_cost.main()
    assert capsys.readouterr().out == (
        "a wakeup across cores / within one: 21.9 / 3.3 us\nan idle vCPU's halt polling: 0 ns\n"
    )
    monkeypatch.setattr(wakeup_cost, "wakeup_cost", lambda: _cost(None, 3.0, None))
    wakeup_cost.main()
    assert capsys.readouterr().out == (
        "a wakeup across cores / within one: - / 3.0 us\nan idle vCPU's halt polling: -\n"
    )


def test_a_child_that_cannot_be_pinned_is_an_error_not_a_hang() -> None:
    """A core this process may not use: the child cannot pin itself and leaves, and the
    probe says so rather than wait for an answer that never comes."""
    before = os.sched_getaffinity(0)
    with pytest.raises(OSError):
        ping_pong(min(before), max(before) + 4096, 10)
    assert os.sched_getaffinity(0) == before
