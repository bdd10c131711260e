"""Which event loop kproxy runs on (`runtime.event_loop`)."""

from __future__ import annotations

import asyncio


def new_event_loop(choice: str = "auto") -> asyncio.AbstractEventLoop:
    """uvloop for `uvloop` (an error when it is not installed), the standard loop for
    `asyncio`, and for `auto` uvloop when installed, the standard loop otherwise."""
    if choice == "asyncio":
        return asyncio.new_event_loop()
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop
