"""The load generators of a benchmark run, each in a process of its own
(``bench.clients``), and what one run of a workload sets going around them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from bench.catalog import Workload
from bench.peers import REPO, env_with_path
from bench.procfs import memory_kb


def generator(
    kind: str, bootstrap: str, topic: str, run_timeout: float, **opts: Any
) -> dict[str, Any]:
    """``python -m bench.clients kind`` on one path with ``opts`` as its options: its
    JSON result."""
    argv = ["--targets", json.dumps([["run", bootstrap, topic]])]
    for key, value in opts.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    result: dict[str, Any] = run_generator("bench.clients", kind, argv, run_timeout)["run"]
    return result


def run_generator(
    module: str, kind: str, argv: list[str], timeout: float, label: str = ""
) -> dict[str, Any]:
    """``python -m module kind *argv``, in its own process: the JSON object on the last
    line it prints (errors name it `label`, by default its kind)."""
    label = label or kind
    try:
        proc = subprocess.run([sys.executable, "-m", module, kind, *argv], capture_output=True,
                              text=True, timeout=timeout, env=env_with_path(), cwd=REPO,
                              check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{label} did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        raise RuntimeError(f"{label} failed: {err[-1] if err else proc.returncode}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def generate(
    wl: Workload,
    bootstrap: str,
    topic: str,
    pid: int | None,
    timeout: float,
) -> dict[str, Any]:
    """One run of ``wl``'s load generator against ``bootstrap``: its JSON result."""
    p = wl.params
    if wl.kind == "produce":
        return generator("produce", bootstrap, topic, timeout, size=p["size"],
                          count=p["count"], acks=p["acks"])  # fmt: skip
    if wl.kind == "rate":
        return generator("rate", bootstrap, topic, timeout, size=p["size"], count=p["count"],
                          acks=p["acks"], rate=p["rate"])  # fmt: skip
    if wl.kind == "consume":
        return generator("consume", bootstrap, topic, timeout, count=p["count"],
                          timeout=timeout - 10,
                          client_config=json.dumps(p.get("client_config", {})))  # fmt: skip
    if wl.kind == "latency":
        return generator("latency", bootstrap, topic, timeout, size=p["size"],
                          count=p["count"], acks=p["acks"])  # fmt: skip
    if wl.kind == "connections":
        return _connections(wl, bootstrap, topic, pid, timeout)
    raise ValueError(f"unknown workload kind {wl.kind}")


def _connections(
    wl: Workload, bootstrap: str, topic: str, pid: int | None, timeout: float
) -> dict[str, Any]:
    p = wl.params
    argv = [sys.executable, "-m", "bench.clients", "idle", "--count", str(p["idle"]),
            "--targets", json.dumps([["idle", bootstrap, topic]]), "--timeout", "120"]  # fmt: skip
    holder = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env_with_path(),
                              cwd=REPO)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdin is not None
        line = _readline(holder, 150)
        ready = json.loads(line)
        if ready.get("opened") != p["idle"]:
            raise RuntimeError(f"only {ready.get('opened')} idle connections opened")
        time.sleep(1.0)  # let allocations settle before reading RSS
        rss_idle = memory_kb(pid).get("VmRSS", 0) if pid is not None else 0
        result = generator("produce", bootstrap, topic, timeout, size=p["size"],
                            count=p["count"], acks=p["acks"])  # fmt: skip
        # Closing its stdin (communicate does) tells the holder to report and exit.
        out, _ = holder.communicate(input="", timeout=60)
        held = json.loads(out.strip().splitlines()[-1])
        result["idle_open_seconds"] = round(float(ready["open_seconds"]), 2)
        result["idle_alive_at_end"] = held.get("alive_at_end")
        result["_rss_idle_kb"] = rss_idle
        return result
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def _readline(proc: subprocess.Popen[str], timeout: float) -> str:
    """The next stdout line of ``proc`` within ``timeout`` seconds."""
    import selectors

    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"no answer from the idle-connection holder in {timeout} s")
            if sel.select(left):
                line = proc.stdout.readline()
                if not line:
                    err = proc.stderr.read() if proc.stderr is not None else ""
                    tail = err.strip().splitlines()
                    raise RuntimeError(
                        f"idle-connection holder exited: {tail[-1] if tail else proc.poll()}"
                    )
                return line
    finally:
        sel.close()


def one_line(exc: BaseException, limit: int = 400) -> str:
    """``exc`` as one line of at most ``limit`` characters, for a log or a record."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:limit]
