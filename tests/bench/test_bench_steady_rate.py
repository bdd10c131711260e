"""A consumer's rate is timed after its first batch; a run whose first batch held every
message has no rate, not a rate of 0 (which would read as a path that moved nothing)."""

from __future__ import annotations

from bench.clients import steady_rate


def test_the_rate_is_what_was_moved_after_the_first_batch_over_its_time() -> None:
    assert steady_rate(20_000, 0.5) == 40_000.0


def test_a_run_whose_first_batch_held_everything_has_no_rate() -> None:
    assert steady_rate(0, 4.5e-6) is None
    assert steady_rate(0, 0.0) is None
    assert steady_rate(100, 0.0) is None
