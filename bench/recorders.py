"""Tools that watch a proxy process for the length of one benchmark run.

* ``py-spy`` (``--profile DIR``): where kproxy's Python spends the CPU, as collapsed
  stacks (``python -m bench profile-top``).
* ``perf trace -s`` (``--syscalls DIR``): how many system calls of each kind a proxy
  makes, for any proxy (haproxy and the Python floor too). Whether kproxy's CPU over
  haproxy's is more reads and writes or more work per read is then a count, not a
  guess from the user/kernel split. Tracing every syscall costs the traced process CPU,
  so a run's CPU figures are not comparable with one made without it.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

# A row of perf trace's summary: syscall, calls, errors, total msec, ...
_SUMMARY_ROW = re.compile(r"^\s+([a-z_0-9]+)\s+(\d+)\s+(\d+)\s+\d+\.\d+\s", re.MULTILINE)


class Recorder:
    """A tool attached to a process until `stop` (SIGINT: both tools write their output
    then)."""

    def __init__(self, argv: list[str], out: Path) -> None:
        self.out = out
        out.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Neither tool says when it has attached; the run starts a moment later.
        time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def py_spy(pid: int, out: Path) -> Recorder:
    """Only samples that hold the GIL count: a thread waiting in epoll or a lock is not
    using the CPU, and without ``--gil`` those waits swamp the profile."""
    return Recorder(
        ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "200",
         "--gil", "--nonblocking", "-o", str(out)],
        out,
    )  # fmt: skip


def perf_trace(pid: int, out: Path) -> Recorder:
    """Every thread of ``pid``, summarised per syscall when stopped."""
    return Recorder(["perf", "trace", "-s", "-p", str(pid), "-o", str(out)], out)


def syscall_counts(summary: str) -> dict[str, int]:
    """Calls per syscall in a ``perf trace -s`` summary, summed over its threads."""
    counts: dict[str, int] = {}
    for name, calls, _errors in _SUMMARY_ROW.findall(summary):
        counts[name] = counts.get(name, 0) + int(calls)
    return counts
