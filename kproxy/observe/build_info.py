"""Which build of kproxy this process runs: its hot path compiled or pure Python, and
its event loop.

The same source runs two ways: pure Python (``pip install .``, the default) or with its
hot path compiled by mypyc (``KPROXY_COMPILE=1``, what the container image runs), and
on uvloop or the standard loop (`runtime.event_loop`). They cost different amounts of
CPU per request (docs/architecture.md, "A compiled hot path"), so an operator comparing two kproxies
needs to know which one each is: `kproxy_build_info` carries both as labels, kproxy
logs them as it starts, and `kproxy version` prints the first.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterable
from importlib.machinery import EXTENSION_SUFFIXES
from typing import Final

COMPILED: Final = "compiled"
PYTHON: Final = "python"
# Some modules compiled and some not: a build gone wrong (an extension removed, or
# sources copied over an installed build), worth an operator's look.
MIXED: Final = "mixed"
NO_LOOP: Final = "none"

# The modules a small request and its response cross, one from each layer the build
# compiles (pyproject.toml, `[tool.kproxy] compiled`): the protocol core, the session's
# fast lane, and the runtime's glue.
HOT_PATH_MODULES: Final = (
    "kproxy.protocol.frames",
    "kproxy.session.fast_lane",
    "kproxy.runtime.client",
)


def hot_path_build(modules: Iterable[str] = HOT_PATH_MODULES) -> str:
    """`COMPILED` when every module of `modules` was loaded from an extension module,
    `PYTHON` when none was, `MIXED` otherwise."""
    compiled = {_is_extension(importlib.import_module(name).__file__) for name in modules}
    if compiled == {True}:
        return COMPILED
    if compiled == {False}:
        return PYTHON
    return MIXED


def event_loop_kind() -> str:
    """The running event loop's package (`uvloop`, `asyncio`), or `NO_LOOP` outside one."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return NO_LOOP
    return type(loop).__module__.split(".", 1)[0]


def _is_extension(path: str | None) -> bool:
    return path is not None and path.endswith(tuple(EXTENSION_SUFFIXES))
