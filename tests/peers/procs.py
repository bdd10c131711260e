"""Child processes of the peer harness: started with logs to a file, always stopped.

Every :class:`PeerProcess` that is running is tracked in a module-level registry and
stopped by an ``atexit`` hook, so a test that forgets (or crashes before) its context
manager exit does not leave a broker behind. When the process is started from the main
thread and ``setpriv`` (util-linux) is available, the child also gets
``PR_SET_PDEATHSIG=SIGKILL`` so that it dies with the test process even if Python is
killed outright (``os._exit``, SIGKILL) and atexit hooks never run. (The parent-death
signal fires when the *thread* that forked exits, so it is not used from other threads.)
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

__all__ = ["PeerProcess", "stop_all", "stop_together"]

_LIVE: weakref.WeakSet[PeerProcess] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


def log_tail(path: Path, lines: int = 40) -> str:
    """Last ``lines`` lines of a log file, "" when there is none (for error messages)."""
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return "\n".join(data.decode(errors="replace").splitlines()[-lines:])


def stop_all() -> None:
    """Stop every process started through :class:`PeerProcess` that is still running."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.stop(timeout=5.0)


atexit.register(stop_all)


def stop_together(procs: list[PeerProcess], grace: float) -> None:
    """SIGTERM to all at once, SIGKILL to each still running after ``grace`` seconds (a
    cluster's last nodes can only time out their controlled shutdown once its quorum is
    gone)."""
    threads = [threading.Thread(target=p.stop, kwargs={"timeout": grace}) for p in procs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class PeerProcess:
    """One external peer process (broker, proxy, tool) with its output in ``log_path``."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.argv = [str(a) for a in argv]
        self.log_path = Path(log_path)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self._popen: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> Self:
        if self.running:
            raise RuntimeError(f"{self.name} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        argv = list(self.argv)
        setpriv = shutil.which("setpriv")
        if setpriv and threading.current_thread() is threading.main_thread():
            argv = [setpriv, "--pdeathsig", "KILL", "--", *argv]
        try:
            self._popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        except BaseException:
            self._log.close()
            self._log = None
            raise
        with _LIVE_LOCK:
            _LIVE.add(self)
        return self

    def stop(self, timeout: float = 15.0, *, kill: bool = False) -> int | None:
        """Terminate (SIGTERM, or SIGKILL at once if ``kill``), then SIGKILL after
        ``timeout`` seconds. Returns the exit code (None if it was never started)."""
        popen = self._popen
        if popen is None:
            return None
        try:
            if popen.poll() is None:
                self._signal(signal.SIGKILL if kill else signal.SIGTERM)
                try:
                    popen.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self._signal(signal.SIGKILL)
                    popen.wait(timeout=10.0)
            return popen.returncode
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(self)
            if self._log is not None:
                self._log.close()
                self._log = None

    def _signal(self, sig: signal.Signals) -> None:
        popen = self._popen
        if popen is None or popen.poll() is not None:
            return
        # The child leads its own session/process group: signal the whole group so helper
        # processes (none expected) go too. Fall back to the single pid.
        try:
            os.killpg(popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                popen.send_signal(sig)

    # -- state -------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen is not None else None

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self._popen.poll() if self._popen is not None else None

    def log_tail(self, lines: int = 40) -> str:
        """Last ``lines`` lines of the process log (for error messages)."""
        return log_tail(self.log_path, lines)

    def describe_failure(self) -> str:
        return (
            f"{self.name} (pid {self.pid}, exit code {self.returncode}); "
            f"log {self.log_path}:\n{self.log_tail()}"
        )

    # -- context manager ---------------------------------------------------------------

    def __enter__(self) -> Self:
        if not self.running:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else f"exit={self.returncode}"
        return f"PeerProcess({self.name!r}, pid={self.pid}, {state})"
