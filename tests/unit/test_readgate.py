"""ReadGate: a transport is read while no reason to pause holds, whatever their order."""

from __future__ import annotations

import asyncio
from typing import cast

from kproxy.proxy.readgate import ReadGate


class Reading:
    """Records pause_reading/resume_reading calls (the two a ReadGate makes)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")

    def is_closing(self) -> bool:
        return False


def gate() -> tuple[ReadGate, Reading]:
    g, t = ReadGate(), Reading()
    g.transport = cast(asyncio.Transport, t)
    return g, t


def test_reading_resumes_only_when_the_last_reason_is_gone() -> None:
    g, t = gate()
    g.pause("in_flight")
    g.pause("upstream_full")
    g.pause("in_flight")  # the same reason twice is one reason
    assert t.calls == ["pause"]
    g.resume("in_flight")
    assert t.calls == ["pause"]
    g.resume("upstream_full")
    assert t.calls == ["pause", "resume"]
    g.resume("upstream_full")  # nothing held: no call
    g.resume("dialling")
    assert t.calls == ["pause", "resume"]
    assert g.reasons == ()


def test_a_reason_resumed_in_any_order_leaves_the_others() -> None:
    g, t = gate()
    for reason in ("a", "b", "c"):
        g.pause(reason)
    g.resume("b")
    assert g.reasons == ("a", "c")
    g.resume("a")
    g.resume("c")
    assert t.calls == ["pause", "resume"]
