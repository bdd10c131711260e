"""kcat (Debian package ``kcat``) run against the confluent-kafka wheel's librdkafka.

Debian 12's kcat 1.7.1 links librdkafka 2.0.2, which cannot parse the ApiVersions answers
of newer brokers. kcat only needs ``librdkafka.so.1``, so a private directory holding a
``librdkafka.so.1`` symlink to the wheel's librdkafka 2.16 plus ``LD_LIBRARY_PATH`` makes
the same kcat binary run on the new library (docs/peers.md §4).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from tests.peers.mock_cluster import librdkafka_path

__all__ = ["kcat_cmd", "kcat_path", "run_kcat"]

_LIBDIR: Path | None = None
_LIBDIR_LOCK = threading.Lock()


def kcat_path() -> str:
    """Absolute path of kcat (``$KCAT`` if set), else FileNotFoundError."""
    override = os.environ.get("KCAT")
    found = override or shutil.which("kcat") or shutil.which("kafkacat")
    if not found:
        raise FileNotFoundError("kcat not found: apt-get install kcat (see .ci/install-peers.sh)")
    return found


def _libdir() -> Path:
    global _LIBDIR
    with _LIBDIR_LOCK:
        if _LIBDIR is None or not (_LIBDIR / "librdkafka.so.1").exists():
            d = Path(tempfile.mkdtemp(prefix="kp-kcat-lib-"))
            (d / "librdkafka.so.1").symlink_to(librdkafka_path())
            atexit.register(shutil.rmtree, d, True)
            _LIBDIR = d
        return _LIBDIR


def kcat_cmd() -> tuple[list[str], dict[str, str]]:
    """``(argv_prefix, env)`` to run kcat on the wheel's librdkafka.

    Example::

        argv, env = kcat_cmd()
        subprocess.run([*argv, "-b", bootstrap, "-L"], env=env, check=True)
    """
    env = dict(os.environ)
    libdir = str(_libdir())
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = f"{libdir}:{old}" if old else libdir
    return [kcat_path()], env


def run_kcat(
    args: Sequence[str],
    *,
    timeout: float = 30.0,
    input_data: str | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``kcat ARGS`` (text mode, output captured)."""
    argv, env = kcat_cmd()
    return subprocess.run(
        [*argv, *args],
        env=env,
        input=input_data,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )
