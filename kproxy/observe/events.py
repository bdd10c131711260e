"""The event log: JSON events that `kproxy analyze` (and anyone with jq) reads.

One JSON object per event, in UTF-8, each with

    {"schema": 1, "type": "...", "ts": "2026-11-22T02:49:36.123456Z", "proxy": "host-123", ...}

and the fields of its type (docs/events.md is the reference). Where they go is a sink's
concern: JSON-lines files in a directory (`kproxy.observe.event_file`, the default) or a Kafka
topic (`kproxy.observe.event_kafka`), or both; every sink gets the same bytes.

The event loop only appends a tuple to a bounded queue (`emit`); a background thread
wakes every `DRAIN_SECONDS`, formats each event queued since once and hands them to the
sinks in batches. When the queue is full an event is dropped and counted (for every
sink, since none gets it), never waited for; a sink that cannot keep up or cannot write
counts its own drops.

The writer is woken by its clock, not by each event: a thread woken per event takes the
GIL from the event loop at a random moment for every sampled request or connection, and
the request that arrives meanwhile waits for it (at 1% request sampling that was the
slowest 1% of round trips, the p99). Woken on a clock it takes the GIL a few times a
second, whatever the event rate.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from kproxy.observe.event_file import FileSink
from kproxy.observe.event_sink import EventRecord, EventSink, SinkReport
from kproxy.runtime.describe import describe

SCHEMA_VERSION: Final = 1

LEADER_CHANGE: Final = "leader_change"
REDIRECT: Final = "redirect"
RECOVERY: Final = "recovery"
NODE_DISCOVERED: Final = "node_discovered"
CONNECTION: Final = "connection"
AUDIT: Final = "audit"
REQUEST_SAMPLE: Final = "request_sample"
SWITCHOVER: Final = "switchover"
EVENT_TYPES: Final = (
    LEADER_CHANGE,
    REDIRECT,
    RECOVERY,
    NODE_DISCOVERED,
    CONNECTION,
    REQUEST_SAMPLE,
    AUDIT,
    SWITCHOVER,
)

# Every event type's own fields, in the order they are written (after schema, type,
# ts, proxy). docs/events.md documents each; a test keeps the two in step.
EVENT_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    LEADER_CHANGE: (
        "topic",
        "topic_id",
        "partition",
        "old_leader",
        "new_leader",
        "old_epoch",
        "new_epoch",
        "source_api",
    ),
    REDIRECT: (
        "api",
        "client_id",
        "topic",
        "topic_id",
        "partition",
        "error_code",
        "from_node",
        "to_node",
        "with_endpoint",
    ),
    RECOVERY: ("topic", "topic_id", "partition", "client_id", "ms", "with_endpoint"),
    NODE_DISCOVERED: ("node_id", "upstream", "advertised"),
    CONNECTION: ("action", "listener", "cause", "principal", "client_address", "tenant"),
    REQUEST_SAMPLE: ("api", "version", "client_id", "total_ms", "upstream_ms"),
    AUDIT: (
        "action",
        "listener",
        "client_address",
        "client_id",
        "principal",
        "api",
        "api_version",
        "resources",
        "outcome",
        "failed",
        "error_codes",
        "mechanism",
        "reauthentication",
        "tenant",
    ),
    SWITCHOVER: (
        "phase",
        "trigger",
        "from_cluster",
        "to_cluster",
        "connections",
        "fence_ms",
        "ms",
        "drained",
        "cut",
        "unanswered",
        "reason",
        "detail",
        "client_id",
        "api",
        "transactions_aborted",
        "transactions_not_aborted",
    ),
}
COMMON_FIELDS: Final = ("schema", "type", "ts", "proxy")

log = logging.getLogger("kproxy.events")

_UNSAFE_IN_NAMES = re.compile(r"[^A-Za-z0-9._-]+")
_BATCH_MAX = 1024  # events formatted and handed to the sinks at once, at most
# How often the writer wakes to drain the queue: an event reaches its sinks this much
# later at most (plus the write), and the queue holds queue_size events per interval.
DRAIN_SECONDS = 0.2
_CLOSE_SECONDS = 10.0  # a sink's flush at shutdown, at most


def instance_id() -> str:
    """`hostname-pid`: tells apart the proxies of a fleet whose logs are merged."""
    return f"{safe_name(socket.gethostname())}-{os.getpid()}"


def safe_name(text: str) -> str:
    """`text` made usable in a file name (the instance id is part of every file's)."""
    return _UNSAFE_IN_NAMES.sub("_", text).strip("._") or "kproxy"


def format_ts(seconds: float) -> str:
    """ISO-8601 UTC with microseconds and a Z: what Spark's to_timestamp reads as is."""
    dt = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# Events about one partition: a Kafka sink keys them by it, so that one partition's
# leadership history stays in order in one partition of the events topic.
PARTITION_EVENTS: Final = frozenset((LEADER_CHANGE, REDIRECT, RECOVERY))


def event_key(event_type: str, fields: dict[str, Any], instance: str) -> bytes:
    """`topic-partition` (or `topic_id-partition`) for partition events, else the
    proxy's instance id (its own events in order)."""
    if event_type in PARTITION_EVENTS:
        topic = fields.get("topic") or fields.get("topic_id")
        if topic is not None and fields.get("partition") is not None:
            return f"{topic}-{fields['partition']}".encode()
    return instance.encode()


# What the event loop puts on the queue: (type, wall-clock seconds, fields).
_Item = tuple[str, float, dict[str, Any]]


class EventLog:
    """A bounded, non-blocking event queue with a writer thread feeding the sinks."""

    def __init__(
        self,
        directory: Path | str | None = None,
        *,
        sinks: Sequence[EventSink] = (),
        instance: str | None = None,
        max_file_bytes: int = 64 * 1024 * 1024,
        rotate_seconds: float = 3600.0,
        queue_size: int = 10000,
        on_written: Callable[[str, str, int], None] | None = None,
        on_dropped: Callable[[str, int], None] | None = None,
        clock: Callable[[], float] = time.time,
        autostart: bool = True,
    ) -> None:
        """`directory`: a file sink there (`kproxy.observe.event_file`), before any of `sinks`.
        `on_written(sink, type, count)` and `on_dropped(sink, count)` feed the metrics."""
        if queue_size < 1:
            raise ValueError("queue_size must be positive")
        self.instance = safe_name(instance) if instance is not None else instance_id()
        all_sinks: list[EventSink] = []
        if directory is not None:
            all_sinks.append(
                FileSink(
                    directory,
                    self.instance,
                    max_file_bytes=max_file_bytes,
                    rotate_seconds=rotate_seconds,
                    clock=clock,
                )
            )
        all_sinks.extend(sinks)
        if not all_sinks:
            raise ValueError("an event log needs a directory or a sink")
        self.sinks = all_sinks
        self.reports = [SinkReport(s.name, on_written, on_dropped) for s in all_sinks]
        self.queue_size = queue_size
        # Appended by the event loop, popped by the writer: deque's append and popleft
        # are atomic, so neither side takes a lock or wakes the other.
        self._queue: deque[_Item] = deque()
        self._in_hand = 0  # events the writer took off the queue and has not yet written
        self._wake = threading.Event()  # close() and flush() wake the writer early
        self._clock = clock
        self._closed = False
        self._thread: threading.Thread | None = None
        self._opened = threading.Event()
        if autostart:
            self.start()

    # -- the event loop's side ---------------------------------------------------------------
    def emit(self, event_type: str, fields: dict[str, Any]) -> bool:
        """Queue one event; never blocks. False (and counted) when it had to be dropped."""
        if not self._closed and len(self._queue) < self.queue_size:
            self._queue.append((event_type, self._clock(), fields))
            return True
        self._count_dropped(1)
        return False

    def sink(self, name: str) -> EventSink | None:
        return next((s for s in self.sinks if s.name == name), None)

    def report(self, name: str) -> SinkReport | None:
        return next((r for r in self.reports if r.name == name), None)

    @property
    def dropped(self) -> int:
        """Events dropped, summed over the sinks."""
        return sum(r.dropped_count for r in self.reports)

    @property
    def written(self) -> dict[str, int]:
        """Events written so far, by event type, summed over the sinks."""
        total: dict[str, int] = {}
        for r in self.reports:
            for t, n in r.written_counts.items():
                total[t] = total.get(t, 0) + n
        return total

    @property
    def files(self) -> list[Path]:
        """Every file the file sink has opened, oldest first."""
        sink = self.sink(FileSink.name)
        return list(sink.files) if isinstance(sink, FileSink) else []

    @property
    def current_file(self) -> Path | None:
        """The file being written, None between files (closed by age, or not yet opened)."""
        sink = self.sink(FileSink.name)
        return sink.current_file if isinstance(sink, FileSink) else None

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def pending(self) -> int:
        """Events emitted and not yet handed to every sink: the queue and the batch the
        writer holds. 0 means every event emitted so far is in the sinks' hands (a file
        line written, a record with librdkafka); never less than the truth."""
        return len(self._queue) + self._in_hand

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kproxy-events", daemon=True)
            self._thread.start()

    def close(self, timeout: float | None = 10.0) -> None:
        """Write everything queued, close the sinks, stop the thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.start()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("event log: writer is stuck; %d event(s) not written", self.queued)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued so far has been handed to the sinks and has
        landed there (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        self._wake.set()
        # The writer counts a batch in `pending` before it takes it off the queue: never
        # 0 while events are on their way to the sinks.
        while self.pending:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        if not self._opened.is_set():
            return True
        return all(s.flush(max(0.0, deadline - time.monotonic())) for s in self.sinks)

    # -- the writer thread ----------------------------------------------------------------------
    def _count_dropped(self, n: int) -> None:
        for r in self.reports:
            r.dropped(n)

    def _open_sinks(self) -> None:
        for sink, report in zip(self.sinks, self.reports, strict=True):
            try:
                sink.open(report)
            except Exception as exc:  # a sink that cannot open drops; the others write
                log.error("event log: cannot open the %s sink: %s", sink.name, describe(exc))
        self._opened.set()

    def _run(self) -> None:
        self._open_sinks()
        q = self._queue
        while True:
            self._wake.wait(DRAIN_SECONDS)
            self._wake.clear()
            stop = self._closed  # read before draining: whatever was queued before
            try:
                while q:
                    n = min(len(q), _BATCH_MAX)
                    self._in_hand = n  # before the pops, so that `pending` never undercounts
                    self._write([q.popleft() for _ in range(n)])
            finally:
                self._in_hand = 0
            self._tick()
            if stop:
                break
        for sink in self.sinks:
            try:
                sink.close(_CLOSE_SECONDS)
            except Exception as exc:
                log.warning("event log: closing the %s sink: %s", sink.name, describe(exc))
        # Anything queued after the last drain (an emit racing close()) is counted.
        late = len(q)
        q.clear()
        self._count_dropped(late)

    def _tick(self) -> None:
        for sink in self.sinks:
            try:
                sink.tick()
            except Exception as exc:
                log.warning("event log: %s sink: %s", sink.name, describe(exc))

    def _write(self, items: list[_Item]) -> None:
        records: list[EventRecord] = []
        instance = self.instance
        dumps = json.dumps
        for event_type, at, fields in items:
            record: dict[str, Any] = {
                "schema": SCHEMA_VERSION,
                "type": event_type,
                "ts": format_ts(at),
                "proxy": instance,
            }
            record.update(fields)
            try:
                line = dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
            except (TypeError, ValueError) as exc:  # the writer outlives any one bad event
                log.error("event log: cannot format a %s event: %s", event_type, describe(exc))
                self._count_dropped(1)
                continue
            records.append(EventRecord(event_type, event_key(event_type, fields, instance), line))
        if not records:
            return
        for sink, report in zip(self.sinks, self.reports, strict=True):
            try:
                sink.write(records)
            except Exception:
                log.exception("event log: the %s sink could not write", sink.name)
                report.dropped(len(records))
