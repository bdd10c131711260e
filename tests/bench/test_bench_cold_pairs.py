"""`bench.cold_pairs`: each timed pair follows a write to every cache line of a buffer
larger than the last-level cache, and the figures come out per pair, for the pairs
named."""

from __future__ import annotations

import json

import pytest

from bench import cold_pairs


def test_evict_writes_one_byte_in_every_cache_line() -> None:
    buffer = bytearray(64 * 10)
    cold_pairs.evict(buffer)
    assert [i for i, b in enumerate(buffer) if b] == list(range(0, 640, 64))


def test_each_timed_call_follows_an_eviction(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    monkeypatch.setattr(cold_pairs, "evict", lambda buffer: order.append("evict"))
    median = cold_pairs.cold_us_per_pair(lambda: order.append("pair"), 5, bytearray(64))
    assert order == ["evict", "pair"] * 5
    assert median >= 0.0


def test_the_named_pairs_are_measured_as_kproxy_builds_them(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cold_pairs, "EVICT_BYTES", 1 << 16)  # the figures' shape, not size
    assert cold_pairs.main(["--pairs", "3", "--repeat", "2", "--json-only", "runtime"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["us_per_pair"]) == {"runtime"}
    assert len(result["us_per_pair"]["runtime"]) == 2
    assert all(us > 0 for us in result["us_per_pair"]["runtime"])
    assert isinstance(result["compiled"], bool)


def test_an_unknown_pair_is_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def measure(*args: object) -> dict[str, object]:
        raise AssertionError("timed an unknown pair")

    monkeypatch.setattr(cold_pairs, "measure", measure)
    with pytest.raises(SystemExit) as exit_:
        cold_pairs.main(["no-such-pair"])
    assert exit_.value.code == 2
    assert "no pair named no-such-pair" in capsys.readouterr().err
