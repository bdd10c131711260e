"""The composition root: settings -> observer, admin server and proxy, run until stopped.

`kproxy run` and `kproxy demo` both call `serve()`; only this module knows every part.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, NamedTuple

from kproxy import __version__
from kproxy.admin.server import AdminServer
from kproxy.observe.build_info import event_loop_kind, hot_path_build
from kproxy.observe.observability import Observability
from kproxy.observe.worker_claims import WorkerClaims
from kproxy.protocol.hostport import format_host_port, is_wildcard
from kproxy.runtime.allocator import retain_freed_memory
from kproxy.runtime.describe import describe
from kproxy.runtime.heap import settle_heap
from kproxy.runtime.loop import new_event_loop
from kproxy.runtime.proxy import Proxy
from kproxy.runtime.reloader import ConfigReloader
from kproxy.runtime.tls import TlsSetupError

if TYPE_CHECKING:
    from kproxy.config.settings import Settings

log = logging.getLogger("kproxy")

_EVENTS_FLUSH_SECONDS = 5.0
#: Set by `kproxy.workers` in each worker's environment: the Unix socket its admin
#: server listens on, for the supervisor alone.
WORKER_ADMIN_ENV = "KPROXY_WORKER_ADMIN"
#: Set in each worker's environment: its index (a worker never supervises).
WORKER_INDEX_ENV = "KPROXY_WORKER"
#: Set in each worker's environment: the table of facts the workers share
#: (kproxy.observe.worker_claims), so that each is reported once.
WORKER_CLAIMS_ENV = "KPROXY_WORKER_CLAIMS"


class Running(NamedTuple):
    """What `serve()` started, for a caller that wants to watch it (the demo)."""

    proxy: Proxy
    observer: Observability
    admin: AdminServer | None


class Stop:
    """Shutdown requests: the first signal drains, a second one cuts the drain short."""

    def __init__(self) -> None:
        self.requested = asyncio.Event()
        self.now = asyncio.Event()

    def signal(self) -> None:
        if self.requested.is_set():
            log.warning("second stop signal: closing every connection now")
            self.now.set()
        self.requested.set()

    def set(self) -> None:
        self.requested.set()

    def is_set(self) -> bool:
        return self.requested.is_set()

    async def wait(self) -> None:
        await self.requested.wait()


async def serve(
    settings: Settings,
    stop: Stop,
    started: Callable[[Running], Awaitable[None]] | None = None,
    config_path: str | None = None,
) -> int:
    """Run the proxy until `stop` is set, then shut down gracefully.

    `started`, if given, is awaited once everything listens; the proxy keeps serving
    while it runs, and stops when `stop` is set (by it, or by a signal).
    """
    claims_path = os.environ.get(WORKER_CLAIMS_ENV)
    observer = Observability(
        settings, claims=None if claims_path is None else WorkerClaims(claims_path)
    )
    proxy = Proxy(settings, observer)
    admin: AdminServer | None = None
    try:
        if settings.admin.enabled:
            # Before the listeners, so that /healthz answers and /readyz says why not
            # while kproxy is still reaching the cluster.
            admin = AdminServer(settings, observer, proxy, os.environ.get(WORKER_ADMIN_ENV))
            await admin.start()
            if admin.unix_path is None:
                log.info("kproxy admin at http://%s/metrics", admin.address)
        await proxy.start()
        _on_sighup(ConfigReloader(config_path, proxy, observer).reload)
        observer.start_events(_own_bootstrap(settings, proxy.bootstrap_port))
        log.info(
            "kproxy %s, hot path %s, event loop %s",
            __version__,
            hot_path_build(),
            event_loop_kind(),
        )
        log.info(
            "kproxy bootstrap at %s -> %s",
            format_host_port(settings.listeners.advertised_host, proxy.bootstrap_port),
            ",".join(format_host_port(h, p) for h, p in settings.cluster.bootstrap_servers),
        )
        if started is not None:
            await started(Running(proxy, observer, admin))
        await stop.wait()
        if observer.publishes_through_proxy:
            # The events producer reaches the cluster through this kproxy, whose listeners
            # are about to close: publish what happened so far first.
            await asyncio.to_thread(observer.flush_events, _EVENTS_FLUSH_SECONDS)
        grace = proxy.settings.shutdown.grace_seconds  # as the last reload left it
        log.info(
            "stopping: no new connections; each closes once its requests are answered "
            "(%.1fs at most; a second signal stops at once)",
            grace,
        )
        await proxy.stop(grace, stop.now)
    finally:
        _on_sighup(None)
        if admin is not None:
            await admin.stop()
        # Writing out the event log's queue blocks: not on the event loop.
        await asyncio.to_thread(observer.close)
    return 0


def _on_sighup(action: Callable[[], object] | None) -> None:
    """Install (or remove) the SIGHUP handler; only the main thread can (the demo and
    tests may serve from another)."""
    loop = asyncio.get_running_loop()
    with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
        if action is None:
            loop.remove_signal_handler(signal.SIGHUP)
        else:
            loop.add_signal_handler(signal.SIGHUP, action)


def _own_bootstrap(settings: Settings, port: int) -> str:
    """Where kproxy reaches its own bootstrap listener (for its events producer)."""
    host = settings.listeners.bind_host
    if is_wildcard(host):
        host = "::1" if ":" in host else "127.0.0.1"
    return format_host_port(host, port)


def run_loop(settings: Settings, main: Callable[[Stop], Awaitable[int]]) -> int:
    """Run `main(stop)` on the configured event loop; SIGTERM and SIGINT stop it (a
    second one at once)."""
    retain_freed_memory(settings.limits.allocator_retain_bytes)
    loop = new_event_loop(settings.runtime.event_loop)
    asyncio.set_event_loop(loop)
    stop = Stop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.signal)
    try:
        return loop.run_until_complete(main(stop))
    except OSError as exc:
        log.error("kproxy cannot start: %s", describe(exc))
        return 1
    except TlsSetupError as exc:
        log.error("kproxy cannot start: %s", exc)
        return 2
    finally:
        loop.close()


def run(settings: Settings, config_path: str | None = None) -> int:
    """`kproxy run`; SIGHUP reloads `config_path`."""
    return run_loop(
        settings, lambda stop: serve(settings, stop, _settle_heap, config_path=config_path)
    )


async def _settle_heap(_running: Running) -> None:
    # What startup made lives as long as the process: out of every collection's way.
    settle_heap()
