"""Progress lines while Spark works: the job's step, then each running stage's tasks.

A thread polls `SparkContext.statusTracker()` (no SparkListener: that would need JVM
code on the classpath) and prints a line when a stage's count of finished tasks moved:

    [2/11] leader changes
      stage 7: 12/40 tasks (30%)

Lines, not a redrawn bar: they read the same in a terminal, a CI log or a file.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol, TextIO

__all__ = ["Progress", "StageInfo", "format_stage"]


class StageInfo(Protocol):
    """What `SparkStatusTracker.getStageInfo` returns (the fields used here)."""

    stageId: int
    numTasks: int
    numCompletedTasks: int


def format_stage(stage_id: int, done: int, total: int) -> str:
    percent = 100 * done // total if total else 100
    return f"stage {stage_id}: {done}/{total} tasks ({percent}%)"


class Progress:
    """Prints steps and stage progress to `stream` (stderr) from a polling thread."""

    def __init__(
        self,
        tracker: Any,
        *,
        steps: int,
        stream: TextIO | None = None,
        interval: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tracker = tracker
        self._steps = steps
        self._step = 0
        self._stream = stream if stream is not None else sys.stderr
        self._interval = interval
        self._clock = clock
        self._seen: dict[int, int] = {}  # stage id -> completed tasks last printed
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one line at a time from the two threads
        self._thread = threading.Thread(target=self._run, name="kproxy-progress", daemon=True)
        self.started = clock()

    def step(self, name: str) -> None:
        """Announce the next step of the job (called from the job's thread)."""
        with self._lock:
            self._step += 1
            elapsed = self._clock() - self.started
            self._print(f"[{self._step}/{self._steps}] {name} ({elapsed:.1f} s)")

    def poll(self) -> None:
        """Print the stages whose progress moved since the last poll."""
        try:
            active = list(self._tracker.getActiveStageIds())
        except Exception:  # the context is stopping: nothing to report, no traceback
            return
        for stage_id in sorted(active):
            info: StageInfo | None = self._tracker.getStageInfo(stage_id)
            if info is None:
                continue
            done = info.numCompletedTasks
            if self._seen.get(stage_id) == done:
                continue
            self._seen[stage_id] = done
            with self._lock:
                self._print("  " + format_stage(stage_id, done, info.numTasks))

    def _print(self, line: str) -> None:
        print(line, file=self._stream, flush=True)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.poll()

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(5)
