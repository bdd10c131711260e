"""Whether a client is read: paused while any reason holds, resumed when none does.

The reasons (the in-flight limit, a full upstream write buffer, a broker still being
dialled, a drain) are a tuple the connection keeps, not an object of their own: the empty
tuple is shared, so an idle connection holds nothing for them (a gate object would hold
48 bytes, an empty set 216)."""

from __future__ import annotations

import asyncio


def paused(
    transport: asyncio.Transport | None, reasons: tuple[str, ...], reason: str
) -> tuple[str, ...]:
    """`reasons` with `reason` among them; the first one stops reading `transport`."""
    if not reasons and transport is not None:
        transport.pause_reading()
    return reasons if reason in reasons else (*reasons, reason)


def resumed(
    transport: asyncio.Transport | None, reasons: tuple[str, ...], reason: str
) -> tuple[str, ...]:
    """`reasons` without `reason`; once none is left, `transport` is read again."""
    if reason not in reasons:
        return reasons
    left = tuple(r for r in reasons if r != reason)
    if not left and transport is not None and not transport.is_closing():
        transport.resume_reading()
    return left
