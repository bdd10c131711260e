"""Whether a client is read: paused while any reason holds, resumed when none does."""

from __future__ import annotations

import asyncio


class ReadGate:
    """Reasons to stop reading one transport (the in-flight limit, a full upstream
    write buffer, a broker still being dialled, a drain); it reads when none is left."""

    __slots__ = ("reasons", "transport")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        # A tuple, not a set: an empty set costs 216 bytes for every idle connection.
        self.reasons: tuple[str, ...] = ()

    def pause(self, reason: str) -> None:
        if not self.reasons and self.transport is not None:
            self.transport.pause_reading()
        if reason not in self.reasons:
            self.reasons += (reason,)

    def resume(self, reason: str) -> None:
        if reason in self.reasons:
            self.reasons = tuple(r for r in self.reasons if r != reason)
            if not self.reasons and self.transport is not None and not self.transport.is_closing():
                self.transport.resume_reading()
