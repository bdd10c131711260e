"""The event log: JSON lines that `kproxy analyze` (and anyone with jq) reads.

One JSON object per line, in UTF-8, each with

    {"schema": 1, "type": "...", "ts": "2026-11-22T02:49:36.123456Z", "proxy": "host-123", ...}

and the fields of its type (docs/events.md is the reference). Files live in one
directory and are named `events-<UTC yyyymmddThhmmss>-<proxy>-<seq>.jsonl`, so the files
of a whole fleet can be copied into one place and read together, and sort by time.

The event loop only puts a tuple on a bounded queue (`emit`); a background thread
formats the lines, writes them in batches (one `write` per batch, whole lines only, so
a reader never sees half a line unless the disk fills) and rotates files by size and
by age. When the queue is full an event is dropped and counted, never waited for.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import queue
import re
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from kproxy.describe import describe

SCHEMA_VERSION: Final = 1

LEADER_CHANGE: Final = "leader_change"
REDIRECT: Final = "redirect"
RECOVERY: Final = "recovery"
NODE_DISCOVERED: Final = "node_discovered"
CONNECTION: Final = "connection"
REQUEST_SAMPLE: Final = "request_sample"
EVENT_TYPES: Final = (
    LEADER_CHANGE,
    REDIRECT,
    RECOVERY,
    NODE_DISCOVERED,
    CONNECTION,
    REQUEST_SAMPLE,
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
    CONNECTION: ("action", "listener", "cause"),
    REQUEST_SAMPLE: ("api", "version", "client_id", "total_ms", "upstream_ms"),
}
COMMON_FIELDS: Final = ("schema", "type", "ts", "proxy")

FILE_PREFIX: Final = "events-"
FILE_SUFFIX: Final = ".jsonl"

log = logging.getLogger("kproxy.events")

_UNSAFE_IN_NAMES = re.compile(r"[^A-Za-z0-9._-]+")
_BATCH_MAX = 1024  # events formatted and written per write() call, at most
_IDLE_WAKEUP_SECONDS = 1.0


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


def file_name(opened_at: float, instance: str, seq: int) -> str:
    stamp = datetime.datetime.fromtimestamp(opened_at, datetime.UTC).strftime("%Y%m%dT%H%M%S")
    return f"{FILE_PREFIX}{stamp}-{instance}-{seq:06d}{FILE_SUFFIX}"


# What the event loop puts on the queue: (type, wall-clock seconds, fields), or None to
# tell the writer to stop.
_Item = tuple[str, float, dict[str, Any]] | None


class EventLog:
    """A bounded, non-blocking JSON-lines writer with size and time rotation."""

    def __init__(
        self,
        directory: Path | str,
        *,
        instance: str | None = None,
        max_file_bytes: int = 64 * 1024 * 1024,
        rotate_seconds: float = 3600.0,
        queue_size: int = 10000,
        on_written: Callable[[str], None] | None = None,
        on_dropped: Callable[[int], None] | None = None,
        clock: Callable[[], float] = time.time,
        autostart: bool = True,
    ) -> None:
        if max_file_bytes < 1 or rotate_seconds <= 0 or queue_size < 1:
            raise ValueError("max_file_bytes, rotate_seconds and queue_size must be positive")
        self.directory = Path(directory)
        self.instance = safe_name(instance) if instance is not None else instance_id()
        self.max_file_bytes = max_file_bytes
        self.rotate_seconds = rotate_seconds
        self._queue: queue.Queue[_Item] = queue.Queue(queue_size)
        self._on_written = on_written
        self._on_dropped = on_dropped
        self._clock = clock
        self._lock = threading.Lock()  # guards the counters, read from other threads
        self._written: dict[str, int] = {}
        self._dropped = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        # Writer-thread state.
        self._fd: int | None = None
        self._file: Path | None = None
        self._file_bytes = 0
        self._file_opened_at = 0.0
        self._seq = 0
        self._write_error_logged = False
        self.files: list[Path] = []  # every file this log has opened, oldest first
        self.directory.mkdir(parents=True, exist_ok=True)
        if autostart:
            self.start()

    # -- the event loop's side ---------------------------------------------------------------
    def emit(self, event_type: str, fields: dict[str, Any]) -> bool:
        """Queue one event; never blocks. False (and counted) when it had to be dropped."""
        if not self._closed:
            try:
                self._queue.put_nowait((event_type, self._clock(), fields))
                return True
            except queue.Full:
                pass
        self._count_dropped(1)
        return False

    @property
    def dropped(self) -> int:
        with self._lock:
            return self._dropped

    @property
    def written(self) -> dict[str, int]:
        """Lines written so far, by event type."""
        with self._lock:
            return dict(self._written)

    @property
    def current_file(self) -> Path | None:
        """The file being written, None between files (closed by age, or not yet opened)."""
        return self._file if self._fd is not None else None

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kproxy-events", daemon=True)
            self._thread.start()

    def close(self, timeout: float | None = 10.0) -> None:
        """Write everything queued, close the file, stop the thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.start()
        # The stop marker must get in even when the queue is full: wait for room (the
        # writer is draining it); close() runs at shutdown, off the hot path.
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            log.warning("event log: writer is stuck; %d event(s) not written", self.queued)
        if self._thread is not None:
            self._thread.join(timeout)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued so far is written (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    # -- the writer thread ----------------------------------------------------------------------
    def _count_dropped(self, n: int) -> None:
        with self._lock:
            self._dropped += n
        if self._on_dropped is not None:
            self._on_dropped(n)

    def _run(self) -> None:
        q = self._queue
        stop = False
        while not stop:
            try:
                first = q.get(timeout=self._idle_timeout())
            except queue.Empty:
                self._close_if_expired()
                continue
            batch = [first]
            while len(batch) < _BATCH_MAX:
                try:
                    batch.append(q.get_nowait())
                except queue.Empty:
                    break
            items = [item for item in batch if item is not None]
            stop = len(items) != len(batch)
            try:
                self._write(items)
            except Exception:  # the writer must outlive any one bad event
                log.exception("event log: could not write %d event(s)", len(items))
                self._count_dropped(len(items))
            finally:
                for _ in batch:
                    q.task_done()
        self._close_file()
        # Anything queued after the stop marker (an emit racing close()) is counted.
        late = 0
        while True:
            try:
                q.get_nowait()
            except queue.Empty:
                break
            q.task_done()
            late += 1
        if late:
            self._count_dropped(late)

    def _idle_timeout(self) -> float:
        if self._fd is None:
            return _IDLE_WAKEUP_SECONDS
        left = self._file_opened_at + self.rotate_seconds - self._clock()
        return max(0.001, min(_IDLE_WAKEUP_SECONDS, left))

    def _close_if_expired(self) -> None:
        # A file past its age is closed even when idle, so that readers of the directory
        # can treat every file but the newest as complete; the next one is opened by the
        # next event.
        if self._fd is not None and self._clock() - self._file_opened_at >= self.rotate_seconds:
            self._close_file()

    def _write(self, items: list[tuple[str, float, dict[str, Any]]]) -> None:
        chunk: list[bytes] = []
        chunk_bytes = 0
        chunk_types: list[str] = []
        instance = self.instance
        dumps = json.dumps
        now = self._clock()
        for event_type, at, fields in items:
            record: dict[str, Any] = {
                "schema": SCHEMA_VERSION,
                "type": event_type,
                "ts": format_ts(at),
                "proxy": instance,
            }
            record.update(fields)
            line = (dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            if self._needs_new_file(now, chunk_bytes, len(line)):
                self._flush_chunk(chunk, chunk_types)
                chunk, chunk_bytes, chunk_types = [], 0, []
                self._close_file()
            if self._fd is None:
                self._open_file()
            chunk.append(line)
            chunk_bytes += len(line)
            chunk_types.append(event_type)
        self._flush_chunk(chunk, chunk_types)

    def _needs_new_file(self, now: float, chunk_bytes: int, line_bytes: int) -> bool:
        if self._fd is None:
            return False
        if now - self._file_opened_at >= self.rotate_seconds:
            return True
        # A line larger than a whole file still goes somewhere: alone in a file of its own.
        used = self._file_bytes + chunk_bytes
        return used > 0 and used + line_bytes > self.max_file_bytes

    def _flush_chunk(self, chunk: list[bytes], types: list[str]) -> None:
        if not chunk:
            return
        data = b"".join(chunk)
        try:
            if self._fd is None:
                raise OSError("no event file is open")
            view = memoryview(data)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as exc:
            if not self._write_error_logged:
                self._write_error_logged = True
                log.error(
                    "event log: cannot write %s: %s (events are dropped)", self._file, describe(exc)
                )
            self._count_dropped(len(types))
            self._close_file()
            return
        self._file_bytes += len(data)
        with self._lock:
            written = self._written
            for t in types:
                written[t] = written.get(t, 0) + 1
        if self._on_written is not None:
            for t in types:
                self._on_written(t)

    def _open_file(self) -> None:
        now = self._clock()
        path = self.directory / file_name(now, self.instance, self._seq)
        self._seq += 1
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            if not self._write_error_logged:
                self._write_error_logged = True
                log.error("event log: cannot open %s: %s (events are dropped)", path, describe(exc))
            return
        self._fd = fd
        self._file = path
        self._file_bytes = 0
        self._file_opened_at = now
        self.files.append(path)

    def _close_file(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError as exc:
                log.warning("event log: closing %s: %s", self._file, describe(exc))
