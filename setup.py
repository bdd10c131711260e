"""kproxy's build: pure Python unless asked for more.

``KPROXY_COMPILE=1 pip install .`` (or ``pip wheel .``) compiles the hot path, the
modules listed in pyproject.toml's ``[tool.kproxy] compiled``, with mypyc (it needs mypy
and a C compiler). The ``.py`` sources ship beside the compiled modules, and without
``KPROXY_COMPILE`` nothing is compiled: ``pip install -e .`` and the wheels work on a
machine with no compiler.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from setuptools import setup


def compiled_modules() -> list[str]:
    pyproject = tomllib.loads((Path(__file__).parent / "pyproject.toml").read_text())
    modules: list[str] = pyproject["tool"]["kproxy"]["compiled"]
    return modules


def extensions() -> list[Any]:
    if os.environ.get("KPROXY_COMPILE", "") in ("", "0"):
        return []
    from mypyc.build import mypycify

    return list(mypycify(compiled_modules(), opt_level="3"))


setup(ext_modules=extensions())
