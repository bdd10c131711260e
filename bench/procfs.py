"""What /proc says about a peer's process: its CPU time, its resident memory."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from typing import TypeVar

_CLK_TCK = os.sysconf("SC_CLK_TCK")
T = TypeVar("T")


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants alive now: a kproxy under `runtime.workers` is its
    supervisor and the workers it started; every other peer is one process."""
    tree = [pid]
    for parent in tree:
        try:
            with open(f"/proc/{parent}/task/{parent}/children") as fh:
                tree += [int(child) for child in fh.read().split()]
        except OSError:
            pass  # gone since it was listed
    return tree


def _each_in_tree(pid: int, read: Callable[[int], T]) -> Iterator[T]:
    """``read(member)`` for ``pid`` and each descendant still alive (a descendant gone
    since it was listed is skipped; ``pid`` itself must be there)."""
    for member in process_tree(pid):
        try:
            yield read(member)
        except OSError:
            if member == pid:
                raise


def _read_proc(member: int, name: str) -> str:
    with open(f"/proc/{member}/{name}") as fh:
        return fh.read()


def _tree_files(pid: int, name: str) -> Iterator[str]:
    """``/proc/PID/name`` of ``pid`` and of each descendant still alive."""
    return _each_in_tree(pid, functools.partial(_read_proc, name=name))


def open_descriptors(pid: int) -> int:
    """Open descriptors of ``pid`` and its descendants (a supervisor's workers)."""
    return sum(_each_in_tree(pid, lambda member: len(os.listdir(f"/proc/{member}/fd"))))


def cpu_times(pid: int) -> tuple[float, float]:
    """(utime, stime) of ``pid`` and its descendants (all their threads), in seconds:
    user space, and the kernel working for them (their syscalls, and on loopback the
    peer's TCP receive too)."""
    user = system = 0.0
    for text in _tree_files(pid, "stat"):
        # The command name (field 2) may contain spaces: split after its closing paren.
        fields = text[text.rindex(")") + 2 :].split()
        user += int(fields[11]) / _CLK_TCK
        system += int(fields[12]) / _CLK_TCK
    return user, system


class CpuSince:
    """``pid``'s CPU time from now on: made before a run, read once it has ended."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.user0, self.system0 = cpu_times(pid)

    def spent(self) -> tuple[float, float]:
        """(user, system) seconds ``pid`` has spent since this was made."""
        user, system = cpu_times(self.pid)
        return user - self.user0, system - self.system0


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads), in seconds."""
    return sum(cpu_times(pid))


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of ``pid`` in kB, summed with its descendants'."""
    out: dict[str, int] = {}
    for text in _tree_files(pid, "status"):
        for line in text.splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                out[key] = out.get(key, 0) + int(value.split()[0])
    return out


def reset_peak_rss(pid: int) -> bool:
    """Reset the VmHWM of ``pid`` and its descendants to their current RSS (``echo 5 >
    /proc/PID/clear_refs``), so that the peak read after a run is the peak of that run.
    False if the kernel refused."""
    try:
        for member in process_tree(pid):
            with open(f"/proc/{member}/clear_refs", "w") as fh:
                fh.write("5")
        return True
    except OSError:
        return False


def maps_mention(pid: int, needle: str) -> bool:
    with open(f"/proc/{pid}/maps") as fh:
        return any(needle in line for line in fh)
