"""The tree stays ruff- and mypy-clean, and the protocol core and the session stay sans-IO
(no logging either: they return facts, the runtime logs them)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.compiled import compiled_modules

REPO = Path(__file__).resolve().parents[2]
SANS_IO = (REPO / "kproxy" / "protocol", REPO / "kproxy" / "session")
# The protocol core takes bytes and returns values and bytes: no event loop, no HTTP,
# no metrics registry, so every rule can be tested and fuzzed without a socket.
FORBIDDEN_IN_CORE = ("asyncio", "uvloop", "aiohttp", "prometheus_client", "socket", "logging")


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    "argv",
    [("ruff", "check", "."), ("ruff", "format", "--check", ".")],
    ids=["ruff-check", "ruff-format"],
)
def test_ruff(argv: tuple[str, ...]) -> None:
    # Through this interpreter: a `ruff` script need not be on PATH (pyenv's shims).
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed (it comes with the test extra)")
    proc = run(sys.executable, "-m", *argv)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy() -> None:
    proc = run(sys.executable, "-m", "mypy")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_protocol_core_and_session_are_sans_io() -> None:
    offenders = []
    for path in (p for root in SANS_IO for p in root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                if name.split(".")[0] in FORBIDDEN_IN_CORE:
                    offenders.append(f"{path.relative_to(REPO)}: {name}")
    assert offenders == []


def test_no_slice_bound_of_a_compiled_module_calls_anything() -> None:
    """mypyc evaluates a call in a slice bound twice when the sliced object is not a
    type it knows (a memoryview: it tries a fast path first, then the generic one), so
    a bound with a side effect runs it twice: `data[: skim.feed(data)]` fed every byte
    of a streamed Fetch response to the skim twice. Such a bound goes in a local."""
    offenders = []
    for module in compiled_modules():
        for node in ast.walk(ast.parse((REPO / module).read_text())):
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
                bounds = (node.slice.lower, node.slice.upper, node.slice.step)
                calls = [n for b in bounds if b for n in ast.walk(b) if isinstance(n, ast.Call)]
                if calls:
                    offenders.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []


def test_no_module_imports_from_a_test_module() -> None:
    """What several test modules use lives in modules of tests/ beside them: importing a
    test module runs its collection-time code and hides where a helper is kept."""
    offenders = []
    for root in ("tests", "bench", "tools"):
        for path in (REPO / root).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                for name in names:
                    if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_"):
                        offenders.append(f"{path.relative_to(REPO)}: {name}")
    assert offenders == []
