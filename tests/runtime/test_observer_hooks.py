"""`ProxyObserver`'s defaults: what a subclass overrides is what the runtime calls."""

from __future__ import annotations

import pytest

from kproxy.runtime.observer import ProxyObserver
from kproxy.session.inflight import response_seen

# Compiled, ProxyObserver takes no subclass defined in Python (mypyc's native classes do
# not): kproxy's one subclass, `Observability`, is compiled with it.
pytestmark = pytest.mark.pure_python


class _Frames(ProxyObserver):
    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def frame(self, api_key: int, direction: str, size: int) -> None:
        self.calls.append(("frame", api_key, direction, size))

    def response(
        self,
        api_key: int,
        version: int,
        client_id: str | None,
        total_seconds: float,
        upstream_seconds: float,
    ) -> None:
        self.calls.append(("response", api_key, version, client_id, total_seconds))


def test_what_a_step_forwarded_reaches_frame_and_response_by_default() -> None:
    """The runtime reports every request and response one way, whichever path of the
    session took it: a step's lists (`requests_forwarded`, `responses_forwarded`)."""
    observer = _Frames()
    observer.requests_forwarded([(0, 120), (12, 40)])
    seen = response_seen(0, 11, "app", 64, 1.0, 0.25, None, frozenset(), 0, 0)
    observer.responses_forwarded([seen], 1.5)
    assert observer.calls == [
        ("frame", 0, "request", 120),
        ("frame", 12, "request", 40),
        ("frame", 0, "response", 64),
        ("response", 0, 11, "app", 0.5),
    ]
