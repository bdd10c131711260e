"""Keep glibc's allocator from returning frame-sized buffers to the kernel after each use.

A frame that arrives in several reads is joined into one buffer when its last byte is
in (kproxy/protocol/frames.py). glibc serves a block of a megabyte with mmap, or from
the top of the heap that it trims back after the free, so each new buffer starts on
fresh pages and every 4 KiB page costs a page fault. Measured in kproxy during a
1 KiB-message produce run on Tansu (bench/README.md): 173 faults and 1.5 ms for each
1 MB Produce request joined, against 3 faults and 0.16 ms with the thresholds below.

``mallopt(M_MMAP_THRESHOLD)`` serves blocks up to 32 MiB (glibc's largest threshold on
64-bit) from the heap, and ``mallopt(M_TRIM_THRESHOLD)`` keeps up to ``retain_bytes`` of
freed heap for the next frame. On other C libraries (musl has no such knobs) and other
systems this does nothing.
"""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger("kproxy.allocator")

# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024


def retain_freed_memory(retain_bytes: int) -> bool:
    """Apply the thresholds; True when glibc took them. ``retain_bytes`` 0: leave as is."""
    if retain_bytes <= 0 or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018  (present in glibc only)
    except (OSError, AttributeError):
        log.debug("not glibc: allocator thresholds left as they are")
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    mmap_threshold = min(retain_bytes, MMAP_THRESHOLD_MAX)
    ok = bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(
        mallopt(M_TRIM_THRESHOLD, retain_bytes)
    )
    if ok:
        log.debug(
            "allocator: blocks up to %d bytes from the heap, %d freed bytes kept",
            mmap_threshold,
            retain_bytes,
        )
    return ok
