"""`kproxy run`: the process around the proxy (event loop, signals, shutdown)."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import TYPE_CHECKING

from kproxy.admin.server import AdminServer
from kproxy.observability import Observability
from kproxy.proxy.allocator import retain_freed_memory
from kproxy.proxy.server import ProxyContext

if TYPE_CHECKING:
    from kproxy.config import Settings

log = logging.getLogger("kproxy")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed, the standard loop otherwise."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


async def serve(settings: Settings, stop: asyncio.Event) -> int:
    """Run the proxy until `stop` is set, then shut down gracefully."""
    observer = Observability(settings)
    ctx = ProxyContext(settings, observer)
    admin: AdminServer | None = None
    try:
        if settings.admin.enabled:
            # Before the listeners, so that /healthz answers and /readyz says why not
            # while kproxy is still reaching the cluster.
            admin = AdminServer(settings, observer, ctx)
            await admin.start()
            log.info("kproxy admin at http://%s/metrics", admin.address)
        await ctx.start()
        log.info(
            "kproxy bootstrap at %s:%d -> %s",
            settings.listeners.advertised_host,
            ctx.bootstrap_port,
            ",".join(f"{h}:{p}" for h, p in settings.cluster.bootstrap_servers),
        )
        await stop.wait()
        log.info(
            "stopping: no new connections, %.1fs grace for in-flight requests",
            settings.shutdown.grace_seconds,
        )
        await ctx.stop(settings.shutdown.grace_seconds)
    finally:
        if admin is not None:
            await admin.stop()
        # Writing out the event log's queue blocks: not on the event loop.
        await asyncio.to_thread(observer.close)
    return 0


def run(settings: Settings) -> int:
    retain_freed_memory(settings.limits.allocator_retain_bytes)
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        return loop.run_until_complete(serve(settings, stop))
    except OSError as exc:
        log.error("kproxy cannot start: %s", exc)
        return 1
    finally:
        loop.close()
