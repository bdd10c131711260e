"""A peer's CPU and memory are its whole process tree's: a kproxy under
`runtime.workers` spends them in its workers, not in the supervisor the harness
started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from bench.procfs import cpu_times, memory_kb, process_tree

# A worker: spends 0.3 s of CPU, says so, then idles until killed.
WORKER = """
import time
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
print("spun", flush=True)
time.sleep(120)
"""
SUPERVISOR = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {WORKER!r}])"


def test_cpu_and_memory_include_the_workers() -> None:
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR], stdout=subprocess.PIPE, text=True
    )
    try:
        assert supervisor.stdout is not None
        assert supervisor.stdout.readline().strip() == "spun"
        tree = process_tree(supervisor.pid)
        assert len(tree) == 2 and tree[0] == supervisor.pid
        assert sum(cpu_times(supervisor.pid)) >= 0.3
        alone = memory_kb(supervisor.pid)["VmRSS"] - memory_kb(tree[1])["VmRSS"]
        assert memory_kb(supervisor.pid)["VmRSS"] > alone > 0
    finally:
        for pid in reversed(process_tree(supervisor.pid)):
            os.kill(pid, signal.SIGKILL)
        supervisor.wait(30)
