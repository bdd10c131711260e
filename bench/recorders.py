"""Tools that watch a proxy process for the length of one benchmark run.

* ``py-spy`` (``--profile DIR``): where kproxy's Python spends the CPU, as collapsed
  stacks (``python -m bench profile-top``).
* ``perf trace -s`` (``--syscalls DIR``): how many system calls of each kind a proxy
  makes, for any proxy (haproxy and the Python floor too). Whether kproxy's CPU over
  haproxy's is more reads and writes or more work per read is then a count, not a
  guess from the user/kernel split. Tracing every syscall costs the traced process CPU,
  so a run's CPU figures are not comparable with one made without it.
* ``perf record -g`` (``--native-profile DIR``): sampled stacks of any proxy, the kernel
  and native code included. py-spy sees Python frames only, so the compiled build's
  functions (mypyc's C), CPython's own work and the kernel's share are visible only
  here. A run's CPU is split by the object its samples fell in (``perf report --sort
  dso``); the files stay for ``perf report -i``.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

# A row of perf trace's summary: syscall, calls, errors, total msec, ...
_SUMMARY_ROW = re.compile(r"^\s+([a-z_0-9]+)\s+(\d+)\s+(\d+)\s+\d+\.\d+\s", re.MULTILINE)


class Recorder:
    """A tool attached to a process until `stop` (SIGINT: both tools write their output
    then)."""

    def __init__(self, argv: list[str], out: Path) -> None:
        self.out = out
        self.tool = argv[0]
        out.parent.mkdir(parents=True, exist_ok=True)
        # What the tool says on stderr goes beside its output, for `output` to quote when
        # there is none (a tool that is missing, or not allowed to attach).
        self.stderr = out.with_name(out.name + ".stderr")
        with self.stderr.open("wb") as err:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
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

    def written(self) -> Path:
        """The file the tool wrote, once stopped; RuntimeError with its stderr if none."""
        if not self.out.is_file():
            said = self.stderr.read_text(errors="replace").strip()[-400:]
            raise RuntimeError(f"{self.tool} wrote no {self.out.name}: {said}")
        return self.out

    def output(self) -> str:
        """What the tool wrote, as text (`written`)."""
        return self.written().read_text()


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


def perf_record(pid: int, out: Path) -> Recorder:
    """Every thread of ``pid`` sampled about 1,000 times a CPU second, with call stacks."""
    return Recorder(["perf", "record", "-F", "999", "-g", "-p", str(pid), "-o", str(out)], out)


def samples_by_object(data: Path) -> dict[str, int]:
    """Samples per object (`object_name`) in a ``perf record`` file, from ``perf report``;
    ValueError with perf's words when it holds none."""
    report = subprocess.run(
        ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "dso",
         "-g", "none", "-F", "sample,dso"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    counts: dict[str, int] = {}
    for samples, dso in _REPORT_ROW.findall(report.stdout):
        name = object_name(dso)
        counts[name] = counts.get(name, 0) + int(samples)
    if not counts:
        said = " ".join((report.stderr or report.stdout).split())[:400]
        raise ValueError(f"perf report found no samples in {data.name}: {said or 'nothing'}")
    return counts


def shared_out(cpu: float, samples: dict[str, int]) -> dict[str, float]:
    """A run's CPU seconds (from /proc) shared out by object as its samples were."""
    total = sum(samples.values())
    return {name: round(cpu * n / total, 4) for name, n in samples.items()}


# A row of ``perf report -F sample,dso``: samples, then the object.
_REPORT_ROW = re.compile(r"^\s+(\d+)\s+(\S.*?)\s*$", re.MULTILINE)


def object_name(dso: str) -> str:
    """What an object is, for a proxy's CPU split: the kernel, CPython (the interpreter
    and the pure-Python code it runs), kproxy's mypyc build, uvloop, the C library; any
    other object by its file name."""
    if dso.startswith("[kernel"):
        return "kernel"
    if dso.startswith(("libpython", "python")):
        return "CPython"
    if "__mypyc" in dso:
        return "kproxy (mypyc)"
    if dso.startswith("loop.cpython"):
        return "uvloop"
    if dso.startswith("libc.so"):
        return "libc"
    return dso


def syscall_counts(summary: str) -> dict[str, int]:
    """Calls per syscall in a ``perf trace -s`` summary, summed over its threads.
    ValueError with perf's words when it is no summary (perf writes its complaint, such
    as a pid it cannot trace, where the summary would have gone)."""
    if "Summary of events" not in summary:
        said = " ".join(summary.split())[:400]
        raise ValueError(f"perf trace wrote no summary: {said or 'nothing'}")
    counts: dict[str, int] = {}
    for name, calls, _errors in _SUMMARY_ROW.findall(summary):
        counts[name] = counts.get(name, 0) + int(calls)
    return counts


class RunRecorders:
    """The tools a benchmark run attaches to one proxy process, each when its directory
    is given: py-spy (kproxy only), ``perf trace -s`` and ``perf record -g``. Files are
    named after the run (``name``)."""

    def __init__(
        self,
        pid: int | None,
        name: str,
        *,
        profile_dir: Path | None,
        syscalls_dir: Path | None,
        native_profile_dir: Path | None,
        is_kproxy: bool,
    ) -> None:
        self.started: list[Recorder] = []
        self.syscalls: Recorder | None = None
        self.native: Recorder | None = None
        if pid is None:
            return
        if profile_dir is not None and is_kproxy:
            self.started.append(py_spy(pid, profile_dir / name))
        if syscalls_dir is not None:
            self.syscalls = perf_trace(pid, syscalls_dir / name)
            self.started.append(self.syscalls)
        if native_profile_dir is not None:
            self.native = perf_record(pid, native_profile_dir / name.replace(".txt", ".perf.data"))
            self.started.append(self.native)

    def stop(self) -> None:
        """Stop every tool (again: a no-op), so that each writes its output."""
        while self.started:
            self.started.pop().stop()

    def annotate(self, proxy_record: dict[str, Any]) -> None:
        """Add what the stopped tools measured to the proxy's record of the run: its
        syscalls (by name) and its CPU split by object."""
        if self.syscalls is not None:
            calls = syscall_counts(self.syscalls.output())
            proxy_record["syscalls"] = sum(calls.values())
            proxy_record["syscalls_by_name"] = calls
        if self.native is not None:
            samples = samples_by_object(self.native.written())
            proxy_record["cpu_seconds_by_object"] = shared_out(proxy_record["cpu_seconds"], samples)
