"""The modules pyproject.toml's ``[tool.kproxy] compiled`` names: what setup.py builds
with mypyc when KPROXY_COMPILE=1, each with its pure-Python source as the fallback."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def compiled_modules() -> list[str]:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    modules: list[str] = pyproject["tool"]["kproxy"]["compiled"]
    return modules
