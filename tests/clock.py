"""A clock a test moves by hand, given to kproxy's code in place of `time.time` or
`time.monotonic`. Locked: the event writer reads it from a thread of its own."""

from __future__ import annotations

import threading


class Clock:
    def __init__(self, now: float) -> None:
        self._now = now
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    @property
    def now(self) -> float:
        return self()

    @now.setter
    def now(self, value: float) -> None:
        with self._lock:
            self._now = value

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
