"""Facts that several workers see, reported by the first of them alone.

Under `runtime.workers` every worker watches its own connections' responses, so a
partition's leader change reaches every worker whose clients touch the partition, and
every worker discovers the same nodes. Each fact is a key (the partition, the node) with
a state that only moves forward (a leader epoch and a leader, KIP-320); the worker that
moves a key's state first reports the fact, and the others see that it was reported.

The table lives in a file the supervisor creates (`SLOTS` slots, 32 bytes each), mapped
by every worker and changed under an exclusive `flock`: a few microseconds, taken only
when a worker's own table already found a fact (a leader change, a new node), never per
request. A key hashes to one slot; two keys in one slot evict each other, and a fact of
an evicted key is reported again: bounded memory, at the price of a rare duplicate.
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
import struct
from pathlib import Path

SLOTS = 1 << 15
_SLOT = struct.Struct("<16sqq")  # key digest, epoch, leader (or any ordered state)
SIZE = SLOTS * _SLOT.size


def create_claims_file(path: Path) -> None:
    """The empty table, before any worker starts (every slot unheld)."""
    with open(path, "wb") as table:
        table.truncate(SIZE)


class WorkerClaims:
    """One worker's view of the shared table."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDWR)
        try:
            self._map = mmap.mmap(self._fd, SIZE)
        except (OSError, ValueError):
            os.close(self._fd)
            raise
        self.claimed = 0
        self.seen_elsewhere = 0

    def first(self, key: str, epoch: int, leader: int) -> bool:
        """True when this worker is the first to report `key` at (`epoch`, `leader`).

        A state is newer with a greater epoch, or the same epoch and another leader (what
        kproxy.observe.leadership counts as a move; an epoch of -1 is none, as on the
        wire, so epoch-less moves are told apart by their leader alone). An older or an
        equal state was reported already, by whichever worker saw it first.
        """
        digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
        offset = int.from_bytes(digest[:8], "little") % SLOTS * _SLOT.size
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            held, held_epoch, held_leader = _SLOT.unpack_from(self._map, offset)
            if held == digest and (
                epoch < held_epoch or (epoch == held_epoch and leader == held_leader)
            ):
                self.seen_elsewhere += 1
                return False
            _SLOT.pack_into(self._map, offset, digest, epoch, leader)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self.claimed += 1
        return True

    def close(self) -> None:
        self._map.close()
        os.close(self._fd)
