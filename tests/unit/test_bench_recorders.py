"""`--syscalls`: perf trace's summary read into calls per syscall, and `python -m bench
ab`'s table of syscalls per message moved."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.ab import syscall_lines
from bench.recorders import Recorder, perf_trace, syscall_counts

WRITES = 5000


def test_perf_traces_summary_counts_every_call(tmp_path: Path) -> None:
    """Read off the real tool's output: a child making WRITES writes, traced from start
    to end (bench.recorders attaches to a running proxy the same way, by pid)."""
    out = tmp_path / "summary.txt"
    child = "import os\nfd = os.open(os.devnull, os.O_WRONLY)\n"
    child += f"for _ in range({WRITES}):\n    os.write(fd, b'x')\n"
    subprocess.run(["perf", "trace", "-s", "-o", str(out), "--", sys.executable, "-c", child],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    counts = syscall_counts(out.read_text())
    # The interpreter's own start-up writes nothing to a file; a few stray ones at most.
    # perf may miss a call's pair of events now and then (seen: 4,999 of 5,000).
    assert WRITES * 0.99 <= counts["write"] < WRITES + 50
    assert counts["openat"] > 0  # the interpreter opening its modules, and /dev/null


def test_threads_are_summed() -> None:
    summary = """
 Summary of events:

 python (15562), 153272 events, 99.7%

   syscall            calls  errors  total       min       avg       max       stddev
                                     (msec)    (msec)    (msec)    (msec)        (%)
   --------------- --------  ------ -------- --------- --------- ---------     ------
   epoll_pwait        22762      0  4295.353     0.000     0.189    91.573      3.39%
   write              26852      0   764.932     0.013     0.028     0.655      0.24%
   read               26858      0   538.750     0.011     0.020     3.437      0.78%

 python (15563), 400 events, 0.3%

   syscall            calls  errors  total       min       avg       max       stddev
                                     (msec)    (msec)    (msec)    (msec)        (%)
   --------------- --------  ------ -------- --------- --------- ---------     ------
   futex                154     60 10245.041     0.000    66.526   222.627     11.48%
   write                 46      0     2.149     0.017     0.047     0.314     19.10%
"""
    assert syscall_counts(summary) == {
        "epoll_pwait": 22762,
        "write": 26898,
        "read": 26858,
        "futex": 154,
    }


def run(path: str, r: int, calls: dict[str, int] | None) -> dict[str, Any]:
    record: dict[str, Any] = {"round": r, "path": path, "ok": True,
                              "result": {"messages": 1000}}  # fmt: skip
    if calls is not None:
        record["proxy"] = {"syscalls": sum(calls.values()), "syscalls_by_name": calls}
    return record


def test_ab_prints_each_proxys_syscalls_per_message() -> None:
    results = {
        "meta": {"rounds": 2},
        "paths": {"direct": {}, "haproxy": {}, "kproxy-uvloop": {}},
        "workloads": {
            "latency": {
                "metrics": [{"key": "p50_ms", "label": "p50", "unit": "ms"}],
                "runs": [
                    run("direct", 0, None),
                    run("haproxy", 0, {"sendto": 2000, "recvfrom": 2000, "epoll_wait": 2100}),
                    run("kproxy-uvloop", 0, {"write": 2000, "read": 2000, "futex": 3}),
                    run("direct", 1, None),
                    run("haproxy", 1, {"sendto": 2000, "recvfrom": 2200, "epoll_wait": 1900}),
                    run("kproxy-uvloop", 1, {"write": 2000, "read": 2400, "futex": 5}),
                ],
            }
        },
    }
    lines = [line.split() for line in syscall_lines(results, "latency")]
    assert lines[0] == ["syscalls", "per", "message", "haproxy", "kproxy-uvloop"]
    rows = {line[0]: line[1:] for line in lines[1:]}
    # Medians over the rounds; a syscall a proxy never made reads 0; futex (under 0.01
    # per message on every path) is left out.
    assert rows["read"] == ["0.000", "2.200"]
    assert rows["recvfrom"] == ["2.100", "0.000"]
    assert rows["epoll_wait"] == ["2.000", "0.000"]
    assert rows["write"] == ["0.000", "2.000"]
    assert "futex" not in rows
    assert next(iter(rows)) == "read"  # the largest first


def test_a_tool_that_wrote_nothing_is_named_with_what_it_said(tmp_path: Path) -> None:
    """perf refusing to attach (here: no such process) fails the run with perf's own
    words, not with a count of nothing."""
    recorder = perf_trace(2**22 + 1, tmp_path / "summary.txt")  # above Linux's pid_max
    recorder.stop()
    with pytest.raises(ValueError, match=r"^perf trace wrote no summary: Problems parsing"):
        syscall_counts(recorder.output())
    # A tool that wrote no file at all: its stderr says why.
    silent = Recorder([sys.executable, "-c", "import sys; sys.exit('cannot attach')"],
                      tmp_path / "profile.txt")  # fmt: skip
    silent.stop()
    with pytest.raises(RuntimeError, match=r"wrote no profile\.txt: cannot attach"):
        silent.output()
