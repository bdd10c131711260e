"""kproxy's layering holds: import-linter's contracts (pyproject.toml), no import cycle
between any two of kproxy's modules, and no hand-written module over 400 lines."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 400


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the kproxy package under `root`, with the repo's contracts."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
            "--config",
            str(REPO / "pyproject.toml"),
            "--no-cache",
        ],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_contracts_are_kept() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_forbidden_import_breaks_a_contract(tmp_path: Path) -> None:
    """The contracts bite: the session importing the metrics module is refused."""
    shutil.copytree(
        REPO / "kproxy", tmp_path / "kproxy", ignore=shutil.ignore_patterns("__pycache__")
    )
    session = tmp_path / "kproxy" / "session" / "session.py"
    session.write_text(session.read_text() + "\nimport kproxy.observe.metrics  # noqa\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert "kproxy.session.session -> kproxy.observe.metrics" in result.stdout


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_between_modules() -> None:
    # TYPE_CHECKING imports count: a cycle hidden behind them is still a cycle of design.
    graph = grimp.build_graph("kproxy", exclude_type_checking_imports=False)
    edges = {
        m: {i for i in graph.find_modules_directly_imported_by(m) if i.startswith("kproxy")}
        for m in graph.modules
    }
    assert _cycles(edges) == []
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_over_400_lines() -> None:
    too_long = {
        str(path.relative_to(REPO)): n
        for path in sorted((REPO / "kproxy").rglob("*.py"))
        if "generated" not in path.parts
        and (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert too_long == {}
