"""The file sink: JSON lines in one directory, rotated by size and by age.

Files are named `events-<UTC yyyymmddThhmmss>-<proxy>-<seq>.jsonl`, so the files of a
whole fleet can be copied into one place and read together, and sort by time. Each
batch is one `write` of whole lines, so a reader never sees half a line unless the
disk fills; a file past its age is closed even when idle, so every file but the
newest is complete.
"""

from __future__ import annotations

import datetime
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from kproxy.observe.event_sink import EventRecord, SinkReport
from kproxy.runtime.describe import describe

__all__ = ["FILE_PREFIX", "FILE_SUFFIX", "FileSink", "file_name"]

FILE_PREFIX: Final = "events-"
FILE_SUFFIX: Final = ".jsonl"

log = logging.getLogger("kproxy.events")


def file_name(opened_at: float, instance: str, seq: int) -> str:
    stamp = datetime.datetime.fromtimestamp(opened_at, datetime.UTC).strftime("%Y%m%dT%H%M%S")
    return f"{FILE_PREFIX}{stamp}-{instance}-{seq:06d}{FILE_SUFFIX}"


class FileSink:
    """JSON-lines files in `directory`, one line per event."""

    name = "file"

    def __init__(
        self,
        directory: Path | str,
        instance: str,
        *,
        max_file_bytes: int = 64 * 1024 * 1024,
        rotate_seconds: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_file_bytes < 1 or rotate_seconds <= 0:
            raise ValueError("max_file_bytes and rotate_seconds must be positive")
        self.directory = Path(directory)
        self.instance = instance
        self.max_file_bytes = max_file_bytes
        self.rotate_seconds = rotate_seconds
        self._clock = clock
        self._report = SinkReport(self.name, None, None)
        self._fd: int | None = None
        self._file: Path | None = None
        self._file_bytes = 0
        self._file_opened_at = 0.0
        self._seq = 0
        self._write_error_logged = False
        self.files: list[Path] = []  # every file this sink has opened, oldest first
        self.directory.mkdir(parents=True, exist_ok=True)

    @property
    def current_file(self) -> Path | None:
        return self._file if self._fd is not None else None

    def open(self, report: SinkReport) -> None:
        self._report = report

    def tick(self) -> None:
        # A file past its age is closed even when idle, so that readers of the directory
        # can treat every file but the newest as complete; the next one is opened by the
        # next event.
        if self._fd is not None and self._clock() - self._file_opened_at >= self.rotate_seconds:
            self._close_file()

    def flush(self, timeout: float) -> bool:
        return True  # every write() is a write(2): nothing is held back

    def close(self, timeout: float) -> None:
        self._close_file()

    def write(self, records: list[EventRecord]) -> None:
        chunk: list[bytes] = []
        chunk_bytes = 0
        chunk_types: list[str] = []
        now = self._clock()
        for record in records:
            line = record.line + b"\n"
            if self._needs_new_file(now, chunk_bytes, len(line)):
                self._flush_chunk(chunk, chunk_types)
                chunk, chunk_bytes, chunk_types = [], 0, []
                self._close_file()
            if self._fd is None:
                self._open_file()
            chunk.append(line)
            chunk_bytes += len(line)
            chunk_types.append(record.type)
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
            self._report.dropped(len(types))
            self._close_file()
            return
        self._file_bytes += len(data)
        counts: dict[str, int] = {}
        for t in types:
            counts[t] = counts.get(t, 0) + 1
        for t, n in counts.items():
            self._report.written(t, n)

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
