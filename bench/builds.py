"""The kproxy builds a benchmark runs besides the working tree's: another git revision
(``bench ab --baseline REV``) and the mypyc build the container image runs."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def checkout(revision: str | None) -> Iterator[Path | None]:
    """A detached worktree of ``revision`` (removed afterwards), or None."""
    if revision is None:
        yield None
        return
    where = Path(tempfile.mkdtemp(prefix="kproxy-ab-")) / "baseline"
    git = ["git", "-C", str(REPO)]
    subprocess.run([*git, "worktree", "add", "--detach", str(where), revision], check=True,
                   capture_output=True)  # fmt: skip
    try:
        yield where
    finally:
        subprocess.run([*git, "worktree", "remove", "--force", str(where)], check=False,
                       capture_output=True)  # fmt: skip
        shutil.rmtree(where.parent, ignore_errors=True)  # what the worktree left there


def compile_in_place(source: Path) -> None:
    """Compile a checkout's hot path with mypyc beside its sources (setup.py)."""
    subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=source,
        env={**os.environ, "KPROXY_COMPILE": "1"},
        check=True,
        stdout=subprocess.DEVNULL,
    )


def source_copy(into: Path, source: Path = REPO) -> Path:
    """``source``'s kproxy and build files (setup.py, pyproject.toml, README.md) copied
    into ``into``, without any compiled module or bytecode."""
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(source / name, into / name)
    skip = shutil.ignore_patterns("*.so", "__pycache__")
    shutil.copytree(source / "kproxy", into / "kproxy", ignore=skip)
    return into


def compiled_copy(into: Path, source: Path = REPO) -> Path:
    """``source`` copied into ``into`` and compiled there with mypyc: the build the
    container image runs (Dockerfile)."""
    compile_in_place(source_copy(into, source))
    return into
