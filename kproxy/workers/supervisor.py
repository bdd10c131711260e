"""`kproxy run` with `runtime.workers` above 1: a supervisor and its worker processes.

One kproxy process serves its connections on one core. With `runtime.workers: N` (or
`auto`, one per CPU kproxy may use) `kproxy run` becomes a supervisor that starts N
workers, each a whole kproxy (`kproxy run` with the same file) with its own sessions,
discovery and event log, all binding every listening port with SO_REUSEPORT: the kernel
hands each new connection to one of the workers listening on its port. Every worker
learns the cluster's nodes itself (at start and every 30 s) and opens their listeners
on the same fixed ports, which is why several workers need ports fixed in the file.

The supervisor proxies nothing. It:

* starts a worker again when one exits on its own (counted, logged with its exit
  status), waiting longer each time one dies young, so that a worker that cannot start
  does not spin;
* passes SIGHUP (reload) and SIGTERM/SIGINT (drain; a second one closes at once) to
  every worker, and exits once all have;
* serves the admin endpoints once for all (`kproxy.admin.fleet`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kproxy.admin.fleet import FleetAdmin
from kproxy.app import WORKER_ADMIN_ENV, WORKER_CLAIMS_ENV, WORKER_INDEX_ENV, Stop, run_loop
from kproxy.observe.worker_claims import create_claims_file

if TYPE_CHECKING:
    from kproxy.config.settings import Settings

log = logging.getLogger("kproxy.workers")

#: A worker that ran shorter than this died young: the next start waits longer.
YOUNG_SECONDS = 10.0
FIRST_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 30.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Worker:
    """One worker slot: the process filling it now, and how it has fared."""

    def __init__(self, index: int, socket_path: str) -> None:
        self.index = index
        self.socket_path = socket_path
        self.process: asyncio.subprocess.Process | None = None
        self.started = 0.0
        self.runs = 0
        self.backoff = FIRST_BACKOFF_SECONDS


class Supervisor:
    def __init__(self, settings: Settings, config_path: str, count: int) -> None:
        self.settings = settings
        self.config_path = config_path
        self.run_dir = Path(tempfile.mkdtemp(prefix="kproxy-workers-"))
        self.workers = [Worker(i, str(self.run_dir / f"worker-{i}.sock")) for i in range(count)]
        self.claims_path = self.run_dir / "claims"
        create_claims_file(self.claims_path)
        self.restarts = 0
        self.stop = Stop()  # run()'s, once it runs
        self.exit_status = 0

    def running(self) -> list[Worker]:
        return [w for w in self.workers if w.process is not None and w.process.returncode is None]

    def _signal_all(self, sig: int) -> None:
        for worker in self.running():
            assert worker.process is not None
            with contextlib.suppress(ProcessLookupError):
                worker.process.send_signal(sig)

    async def _start(self, worker: Worker) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(worker.socket_path)  # a dead worker's
        env = dict(os.environ)
        env[WORKER_INDEX_ENV] = str(worker.index)
        env[WORKER_CLAIMS_ENV] = str(self.claims_path)
        if self.settings.admin.enabled:
            env[WORKER_ADMIN_ENV] = worker.socket_path
        argv = [sys.executable, "-m", "kproxy", "run", "--config", self.config_path,
                "--log-level", self.settings.log.level]  # fmt: skip
        # A session of its own: a terminal's Ctrl-C reaches the supervisor alone, which
        # passes one SIGTERM on (two would cut every worker's drain short).
        worker.process = await asyncio.create_subprocess_exec(
            *argv, env=env, preexec_fn=_drain_when_orphaned, start_new_session=True
        )
        worker.runs += 1
        worker.started = time.monotonic()
        log.info("worker %d started (pid %d)", worker.index, worker.process.pid)

    async def _keep(self, worker: Worker) -> None:
        """Start `worker`, and again whenever it exits on its own, until stopping."""
        while not self.stop.is_set():
            await self._start(worker)
            assert worker.process is not None
            code = await worker.process.wait()
            if self.stop.is_set():
                log.info("worker %d stopped (exit status %d)", worker.index, code)
                return
            ran = time.monotonic() - worker.started
            if worker.runs == 1 and code > 0 and ran < YOUNG_SECONDS:
                # Its first start failed (a certificate not readable, the bootstrap port
                # held; not a signal, a kill to recover from): stop, as a single kproxy
                # would, rather than try again forever.
                log.error(
                    "worker %d could not start (exit status %d): stopping", worker.index, code
                )
                self.exit_status = code
                self.stop.set()
                return
            if ran < YOUNG_SECONDS:  # 0.5 s, doubling to 30 s, while it keeps dying young
                wait = worker.backoff
                worker.backoff = min(wait * 2, MAX_BACKOFF_SECONDS)
            else:
                wait, worker.backoff = 0.0, FIRST_BACKOFF_SECONDS
            self.restarts += 1
            log.error(
                "worker %d (pid %d) exited with status %d after %.1fs: starting it again%s",
                worker.index,
                worker.process.pid,
                code,
                ran,
                f" in {wait:.1f}s" if wait else "",
            )
            if wait:
                await asyncio.sleep(wait)

    async def run(self, stop: Stop) -> int:
        self.stop = stop
        admin = None
        if self.settings.admin.enabled:
            admin = FleetAdmin(
                self.settings,
                lambda: [(w.index, w.socket_path) for w in self.running()],
                lambda: (len(self.running()), self.restarts),
            )
            await admin.start()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGHUP, self._signal_all, signal.SIGHUP)
        log.info("kproxy supervisor: %d workers", len(self.workers))
        keepers = [asyncio.ensure_future(self._keep(w)) for w in self.workers]
        try:
            await stop.wait()
            log.info("stopping: every worker drains its connections")
            self._signal_all(signal.SIGTERM)
            now: asyncio.Future[Any] = asyncio.ensure_future(stop.now.wait())
            done: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(*keepers))
            await asyncio.wait([now, done], return_when=asyncio.FIRST_COMPLETED)
            if not done.done():  # a second signal: every worker closes at once
                self._signal_all(signal.SIGTERM)
                await done
            now.cancel()
        finally:
            stop.set()  # whatever ended the run: no keeper starts a worker again
            for keeper in keepers:
                keeper.cancel()
            for worker in self.workers:
                if worker.process is not None and worker.process.returncode is None:
                    worker.process.kill()
                    await worker.process.wait()
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGHUP)
            if admin is not None:
                await admin.stop()
            shutil.rmtree(self.run_dir, ignore_errors=True)
        return self.exit_status


def _drain_when_orphaned() -> None:
    """In a worker, before it runs: SIGTERM (a drain) when the supervisor dies, so that a
    supervisor killed outright leaves no worker serving on its ports (Linux's
    PR_SET_PDEATHSIG; elsewhere nothing)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def supervise(settings: Settings, config_path: str, count: int) -> int:
    """Run `count` workers of the configuration at `config_path` until stopped."""
    return run_loop(settings, Supervisor(settings, config_path, count).run)
