"""Warnings that a flood would repeat thousands of times, written once per interval."""

from __future__ import annotations

import logging
import time


class RateLimitedLog:
    """At most one line per key per `interval` seconds; the next line says how many
    were left out meanwhile (2,000 refused connections write one line, not 2,000)."""

    def __init__(self, logger: logging.Logger, interval: float = 10.0) -> None:
        self.logger = logger
        self.interval = interval
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def warning(self, key: str, message: str, *args: object) -> None:
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return
        self._last[key] = now
        left_out = self._suppressed.pop(key, 0)
        if left_out:
            message += " (and %d more like it in the last %.0f s)"
            args = (*args, left_out, self.interval)
        self.logger.warning(message, *args)
