"""The optional mypyc build of the hot path (setup.py, ``KPROXY_COMPILE=1``).

Without ``KPROXY_COMPILE`` nothing is compiled (a machine with no compiler installs and
runs kproxy as pure Python). With it, every module of ``[tool.kproxy] compiled`` becomes
an extension beside its source, and every test that needs no peer passes against the
compiled modules, but those about the pure-Python build itself (marked ``pure_python``),
as does a real client's data path through a `kproxy run` of the build (Tansu, four
clients): all run in a copy of the checkout, the compiled modules checked by file name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.builds import source_copy
from tests.compiled import compiled_modules

REPO = Path(__file__).resolve().parents[2]
# What the suite's quick pass runs (README), less what is about pure Python itself.
COMPILED_SELECTION = "not peers and not slow and not pure_python"
# The real data path through a `kproxy run` of the build.
COMPILED_PEER_TESTS = ("tests/integration/test_tansu_datapath.py",)


def checkout_copy(into: Path) -> Path:
    """A clone of this checkout with its working tree over it: the tracked files as they
    are now (changed, or gone) and new ones git does not ignore, without any compiled
    module. Its history is this one's, shared: the benchmark's tests build a baseline
    revision from it."""
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(REPO), str(into)],
                   check=True)  # fmt: skip
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if name.endswith(".so") or not source.is_file():  # a build's, or deleted
            continue
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, into / name)
    # The index at HEAD, as here: the copy's `git status` is this checkout's.
    subprocess.run(["git", "-C", str(into), "reset", "-q"], check=True)
    return into


def build(copy: Path, compile_: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KPROXY_COMPILE"}
    if compile_:
        env["KPROXY_COMPILE"] = "1"
    return subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def extensions(copy: Path) -> set[str]:
    return {str(p.relative_to(copy)).split(".")[0] + ".py" for p in (copy / "kproxy").rglob("*.so")}


def test_without_the_switch_nothing_is_compiled(tmp_path: Path) -> None:
    copy = source_copy(tmp_path)
    run = build(copy, compile_=False)
    assert run.returncode == 0, run.stderr
    assert extensions(copy) == set()


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a build, then the quick suite and a data path on it
def test_the_compiled_hot_path_passes_the_same_tests(tmp_path: Path) -> None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler on this machine: the mypyc build cannot run")
    copy = checkout_copy(tmp_path)
    run = build(copy, compile_=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert extensions(copy) == set(compiled_modules())
    # The tests run in the copy: it is first on their path, and what they start
    # (`kproxy run` in tests/kproxy_process.py) puts it first too. The pure pass of the
    # suite runs the property tests at the CI profile's 200 examples; here they check
    # that the compiled modules behave as the pure ones on the dev profile's 25, which
    # keeps this test to a few minutes of CI.
    env = {**os.environ, "PYTHONPATH": str(copy), "HYPOTHESIS_PROFILE": "dev"}
    for module in ("kproxy.session.session", "kproxy.runtime.client"):
        which = subprocess.run(
            [sys.executable, "-c", f"import {module} as m; print(m.__file__)"],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert which.stdout.strip().endswith(".so"), which.stdout
    # What an operator asks of an installed kproxy (kproxy/observe/build_info.py).
    version = subprocess.run(
        [sys.executable, "-m", "kproxy", "version"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.splitlines()[1] == "hot path: compiled", version.stdout
    pytest_run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    for selection in (["-m", COMPILED_SELECTION, "tests"], list(COMPILED_PEER_TESTS)):
        tests = subprocess.run(
            [*pytest_run, *selection],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
        )
        assert tests.returncode == 0, tests.stdout[-5000:]
        assert " passed" in tests.stdout
