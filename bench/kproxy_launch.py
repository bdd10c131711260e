"""Run kproxy on a chosen event loop: ``python -m bench.kproxy_launch --loop asyncio run ...``.

kproxy picks uvloop whenever it is importable (``kproxy.proxy.app.new_event_loop``) and
has no switch for the standard loop yet, so the benchmark replaces that function before
calling the real CLI. ``--loop uvloop`` changes nothing (kproxy's own choice).
"""

from __future__ import annotations

import asyncio
import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    loop = "uvloop"
    if len(args) >= 2 and args[0] == "--loop":
        loop = args[1]
        args = args[2:]
    if loop not in ("uvloop", "asyncio"):
        raise SystemExit(f"--loop must be uvloop or asyncio, not {loop!r}")
    if loop == "asyncio":
        import kproxy.proxy.app as app

        app.new_event_loop = asyncio.new_event_loop
    from kproxy.cli import main as kproxy_main

    return kproxy_main(args)


if __name__ == "__main__":
    raise SystemExit(main())
