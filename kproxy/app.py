"""The composition root: settings -> observer, admin server and proxy, run until stopped.

`kproxy run` and `kproxy demo` both call `serve()`; only this module knows every part.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, NamedTuple

from kproxy.admin.server import AdminServer
from kproxy.observability import Observability
from kproxy.proxy.allocator import retain_freed_memory
from kproxy.proxy.loop import new_event_loop
from kproxy.proxy.proxy import Proxy

if TYPE_CHECKING:
    from kproxy.config import Settings

log = logging.getLogger("kproxy")


class Running(NamedTuple):
    """What `serve()` started, for a caller that wants to watch it (the demo)."""

    proxy: Proxy
    observer: Observability
    admin: AdminServer | None


async def serve(
    settings: Settings,
    stop: asyncio.Event,
    started: Callable[[Running], Awaitable[None]] | None = None,
) -> int:
    """Run the proxy until `stop` is set, then shut down gracefully.

    `started`, if given, is awaited once everything listens; the proxy keeps serving
    while it runs, and stops when `stop` is set (by it, or by a signal).
    """
    observer = Observability(settings)
    proxy = Proxy(settings, observer)
    admin: AdminServer | None = None
    try:
        if settings.admin.enabled:
            # Before the listeners, so that /healthz answers and /readyz says why not
            # while kproxy is still reaching the cluster.
            admin = AdminServer(settings, observer, proxy)
            await admin.start()
            log.info("kproxy admin at http://%s/metrics", admin.address)
        await proxy.start()
        log.info(
            "kproxy bootstrap at %s:%d -> %s",
            settings.listeners.advertised_host,
            proxy.bootstrap_port,
            ",".join(f"{h}:{p}" for h, p in settings.cluster.bootstrap_servers),
        )
        if started is not None:
            await started(Running(proxy, observer, admin))
        await stop.wait()
        log.info(
            "stopping: no new connections, %.1fs grace for in-flight requests",
            settings.shutdown.grace_seconds,
        )
        await proxy.stop(settings.shutdown.grace_seconds)
    finally:
        if admin is not None:
            await admin.stop()
        # Writing out the event log's queue blocks: not on the event loop.
        await asyncio.to_thread(observer.close)
    return 0


def run_loop(settings: Settings, main: Callable[[asyncio.Event], Awaitable[int]]) -> int:
    """Run `main(stop)` on the configured event loop; SIGTERM and SIGINT set `stop`."""
    retain_freed_memory(settings.limits.allocator_retain_bytes)
    loop = new_event_loop(settings.runtime.event_loop)
    asyncio.set_event_loop(loop)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        return loop.run_until_complete(main(stop))
    except OSError as exc:
        log.error("kproxy cannot start: %s", exc)
        return 1
    finally:
        loop.close()


def run(settings: Settings) -> int:
    """`kproxy run`."""
    return run_loop(settings, lambda stop: serve(settings, stop))
