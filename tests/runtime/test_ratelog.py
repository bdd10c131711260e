"""Warnings a flood would repeat are written once per interval, with the count left out."""

from __future__ import annotations

import logging

import pytest

from kproxy.runtime import ratelog
from kproxy.runtime.ratelog import RateLimitedLog


def test_one_line_per_interval_and_key(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [100.0]
    monkeypatch.setattr(ratelog.time, "monotonic", lambda: clock[0])
    limited = RateLimitedLog(logging.getLogger("kproxy.test"), interval=10)
    with caplog.at_level(logging.WARNING, logger="kproxy.test"):
        for i in range(2000):
            limited.warning("refused", "refusing client %d", i)
        limited.warning("other", "another reason")
        assert [r.getMessage() for r in caplog.records] == ["refusing client 0", "another reason"]
        clock[0] += 10
        limited.warning("refused", "refusing client %d", 2000)
    assert caplog.records[-1].getMessage() == (
        "refusing client 2000 (and 1999 more like it in the last 10 s)"
    )
