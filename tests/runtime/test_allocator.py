"""kproxy keeps frame-sized buffers in glibc's heap (kproxy/runtime/allocator.py).

Whether a block came from mmap is read from glibc's own accounting (mallinfo2's
``hblks``: blocks currently mmapped), in a fresh interpreter per case so that nothing
else in the test process has moved the thresholds.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap

import pytest

from kproxy.config.settings import ConfigError, parse_config
from kproxy.runtime.allocator import retain_freed_memory

try:
    _GLIBC = hasattr(ctypes.CDLL(None), "gnu_get_libc_version") and sys.platform == "linux"
except OSError:
    _GLIBC = False

needs_glibc = pytest.mark.skipif(not _GLIBC, reason="the thresholds are glibc's")

PROBE = textwrap.dedent(
    """
    import ctypes, sys
    from kproxy.runtime.allocator import retain_freed_memory

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    applied = retain_freed_memory(int(sys.argv[1]))
    before = libc.mallinfo2().hblks
    frame = bytes(4 * 1024 * 1024)  # a joined 4 MiB frame
    print(applied, libc.mallinfo2().hblks - before)
    """
)


def _probe(retain: int) -> tuple[bool, int]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(retain)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    return out[0] == "True", int(out[1])


@needs_glibc
def test_frame_sized_blocks_come_from_the_heap() -> None:
    assert _probe(32 * 1024 * 1024) == (True, 0)


@needs_glibc
def test_zero_keeps_glibc_defaults_where_such_a_block_is_mmapped() -> None:
    assert _probe(0) == (False, 1)


def test_nothing_to_do_for_zero() -> None:
    assert retain_freed_memory(0) is False


def test_config_knob() -> None:
    base = {"cluster": {"bootstrap_servers": ["127.0.0.1:9092"]}}
    assert parse_config(base).limits.allocator_retain_bytes == 32 * 1024 * 1024
    off = parse_config({**base, "limits": {"allocator_retain_bytes": 0}})
    assert off.limits.allocator_retain_bytes == 0
    with pytest.raises(ConfigError, match=r"limits\.allocator_retain_bytes"):
        parse_config({**base, "limits": {"allocator_retain_bytes": -1}})
