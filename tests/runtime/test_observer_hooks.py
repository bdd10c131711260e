"""`ProxyObserver`'s defaults: what a subclass overrides is what the runtime calls."""

from __future__ import annotations

import pytest

from kproxy.runtime.observer import ProxyObserver

# Compiled, ProxyObserver takes no subclass defined in Python (mypyc's native classes do
# not): kproxy's one subclass, `Observability`, is compiled with it.
pytestmark = pytest.mark.pure_python


class _Frames(ProxyObserver):
    def __init__(self) -> None:
        self.frames: list[tuple[int, str, int]] = []

    def frame(self, api_key: int, direction: str, size: int) -> None:
        self.frames.append((api_key, direction, size))


class _Requests(ProxyObserver):
    def __init__(self) -> None:
        self.requests: list[tuple[int, int]] = []

    def request_forwarded(self, api_key: int, size: int) -> None:
        self.requests.append((api_key, size))


def test_the_request_counter_counts_a_request_frame_by_default() -> None:
    observer = _Frames()
    observer.request_counter()(0, 120)
    assert observer.frames == [(0, "request", 120)]


def test_the_request_counter_is_an_overridden_request_forwarded() -> None:
    observer = _Requests()
    observer.request_counter()(3, 40)
    assert observer.requests == [(3, 40)]
