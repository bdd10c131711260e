"""The read gate: a transport is read while no reason to pause holds, whatever their order."""

from __future__ import annotations

import asyncio
from typing import cast

from kproxy.runtime.readgate import paused, resumed


class Reading:
    """Records pause_reading/resume_reading calls (the two the gate makes)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.reasons: tuple[str, ...] = ()

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")

    def is_closing(self) -> bool:
        return False

    def pause(self, reason: str) -> None:
        self.reasons = paused(cast(asyncio.Transport, self), self.reasons, reason)

    def resume(self, reason: str) -> None:
        self.reasons = resumed(cast(asyncio.Transport, self), self.reasons, reason)


def test_reading_resumes_only_when_the_last_reason_is_gone() -> None:
    t = Reading()
    t.pause("in_flight")
    t.pause("upstream_full")
    t.pause("in_flight")  # the same reason twice is one reason
    assert t.calls == ["pause"]
    t.resume("in_flight")
    assert t.calls == ["pause"]
    t.resume("upstream_full")
    assert t.calls == ["pause", "resume"]
    t.resume("upstream_full")  # nothing held: no call
    t.resume("dialling")
    assert t.calls == ["pause", "resume"]
    assert t.reasons == ()


def test_a_reason_resumed_in_any_order_leaves_the_others() -> None:
    t = Reading()
    for reason in ("a", "b", "c"):
        t.pause(reason)
    t.resume("b")
    assert t.reasons == ("a", "c")
    t.resume("a")
    t.resume("c")
    assert t.calls == ["pause", "resume"]


def test_reasons_before_a_transport_are_kept_and_pause_nothing() -> None:
    reasons = paused(None, (), "dialling")
    assert reasons == ("dialling",)
    assert resumed(None, reasons, "dialling") == ()


def test_a_closing_transport_is_not_resumed() -> None:
    t = Reading()
    t.pause("drain")
    t.is_closing = lambda: True  # type: ignore[method-assign]
    t.resume("drain")
    assert t.calls == ["pause"] and t.reasons == ()
