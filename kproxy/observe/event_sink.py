"""What an event sink is: where the event log's writer thread hands formatted events.

`kproxy.observe.event_file` (JSON-lines files) and `kproxy.observe.event_kafka` (a Kafka topic) are
the two; `kproxy.observe.events.EventLog` feeds any number of them the same records.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import NamedTuple, Protocol

__all__ = ["EventRecord", "EventSink", "SinkReport"]


class EventRecord(NamedTuple):
    """One formatted event: what every sink receives."""

    type: str
    key: bytes
    line: bytes  # the JSON object, UTF-8, no newline


class SinkReport:
    """A sink's counts (what it wrote, what it had to drop), kept by the event log and
    passed on to the metrics; called from the writer thread or a client's thread."""

    def __init__(
        self,
        name: str,
        on_written: Callable[[str, str, int], None] | None,
        on_dropped: Callable[[str, int], None] | None,
    ) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._written: dict[str, int] = {}
        self._dropped = 0
        self._on_written = on_written
        self._on_dropped = on_dropped

    def written(self, event_type: str, n: int = 1) -> None:
        with self._lock:
            self._written[event_type] = self._written.get(event_type, 0) + n
        if self._on_written is not None:
            self._on_written(self.name, event_type, n)

    def dropped(self, n: int) -> None:
        if n <= 0:
            return
        with self._lock:
            self._dropped += n
        if self._on_dropped is not None:
            self._on_dropped(self.name, n)

    @property
    def written_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._written)

    @property
    def dropped_count(self) -> int:
        with self._lock:
            return self._dropped


class EventSink(Protocol):
    """Where formatted events go. Every method runs on the event log's writer thread."""

    name: str

    def open(self, report: SinkReport) -> None:
        """Before the first write: acquire what the sink needs (may take a while)."""

    def write(self, records: list[EventRecord]) -> None:
        """Write or queue `records`; count each in `report` once written or dropped."""

    def tick(self) -> None:
        """Housekeeping, at least once a second while idle (rotation, delivery reports)."""

    def flush(self, timeout: float) -> bool:
        """Wait until everything written so far has landed; False on timeout."""

    def close(self, timeout: float) -> None:
        """Flush (at most `timeout` seconds; the rest is counted dropped) and release."""
