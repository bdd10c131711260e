"""kproxy freezes what its startup made, out of every later collection's way
(kproxy/runtime/heap.py).

Each case runs in a fresh interpreter: freezing the heap is process-wide, and the test
process must not freeze its own.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _python(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return out.stdout.split()


def test_settling_freezes_what_startup_made_and_keeps_collecting_cycles() -> None:
    frozen_before, frozen, thresholds_kept, enabled, cycle_freed = _python(
        """
        import gc, weakref
        import kproxy.app
        from kproxy.runtime.heap import settle_heap

        before = gc.get_freeze_count()
        thresholds = gc.get_threshold()
        frozen = settle_heap()
        assert frozen == gc.get_freeze_count()

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle made after settling, as an exception's
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        print(before, frozen, gc.get_threshold() == thresholds, gc.isenabled(), gone() is None)
        """
    )
    assert frozen_before == "0"
    # kproxy's imports alone leave tens of thousands of objects to freeze.
    assert int(frozen) > 10_000
    assert thresholds_kept == "True"
    assert enabled == "True"
    assert cycle_freed == "True"


def test_kproxy_run_settles_its_heap_once_it_listens() -> None:
    # `kproxy run` against a broker that is not there: it listens all the same (and
    # says on /readyz that it cannot reach the cluster); a thread waits for the settled
    # heap, reports it and stops kproxy as SIGTERM would.
    before, frozen, exit_code = _python(
        """
        import gc, os, signal, socket, sys, threading, time
        from kproxy import app
        from kproxy.config.settings import parse_config

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            absent = s.getsockname()[1]
        settings = parse_config({
            "cluster": {"bootstrap_servers": [f"127.0.0.1:{absent}"]},
            "listeners": {"bind_host": "127.0.0.1", "advertised_host": "127.0.0.1",
                          "bootstrap_port": 0, "broker_port_base": 0},
            "admin": {"enabled": False},
            "events": {"enabled": False},
        })
        before = gc.get_freeze_count()

        def watch():
            deadline = time.monotonic() + 60
            while gc.get_freeze_count() == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            print(before, gc.get_freeze_count(), flush=True)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=watch, daemon=True).start()
        print(app.run(settings))
        """
    )
    assert before == "0"
    assert int(frozen) > 10_000
    assert exit_code == "0"
