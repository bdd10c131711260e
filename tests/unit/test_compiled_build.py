"""The optional mypyc build of the hot path (setup.py, ``KPROXY_COMPILE=1``).

Without ``KPROXY_COMPILE`` nothing is compiled (a machine with no compiler installs and
runs kproxy as pure Python). With it, every module of ``[tool.kproxy] compiled`` becomes
an extension beside its source, and the session, protocol, leadership, runtime and
observer tests pass against the compiled modules, as does a real client's data path
through a `kproxy run` of the build (Tansu, four clients): all run in a copy of the
source and its tests, the compiled modules checked by file name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.ab import source_copy
from tests.compiled import compiled_modules

REPO = Path(__file__).resolve().parents[2]
COMPILED_TESTS = (
    "tests/session",
    "tests/property/test_walker_kio.py",
    "tests/unit/test_frames_headers.py",
    "tests/unit/test_correlation.py",
    "tests/unit/test_leadership.py",
    "tests/unit/test_leadership_recoveries.py",
    "tests/unit/test_leadership_walked.py",
    # The runtime's glue and what it reports to (compiled since the fast lane made them
    # most of a small round trip's Python), and the real data path through them.
    "tests/runtime",
    "tests/unit/test_events.py",
    "tests/unit/test_events_observability.py",
    "tests/unit/test_event_sinks.py",
    "tests/unit/test_admin.py",
    "tests/unit/test_readgate.py",
    "tests/integration/test_tansu_datapath.py",
)


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
def test_the_compiled_hot_path_passes_the_same_tests(tmp_path: Path) -> None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler on this machine: the mypyc build cannot run")
    copy = source_copy(tmp_path)
    run = build(copy, compile_=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert extensions(copy) == set(compiled_modules())
    # The tests run in the copy too: what they start (`kproxy run` in
    # tests/kproxy_process.py) puts the copy, its compiled kproxy, first on the path.
    for tree in ("tests", "docs"):  # docs: the event log's reference, checked against the code
        shutil.copytree(REPO / tree, copy / tree, ignore=shutil.ignore_patterns("__pycache__"))
    # The pure pass of the suite runs the property tests at the CI profile's 200
    # examples; here they check that the compiled modules behave as the pure ones on
    # the dev profile's 25, which keeps this test to a few minutes of CI.
    env = {**os.environ, "PYTHONPATH": str(copy), "HYPOTHESIS_PROFILE": "dev"}
    for module in ("kproxy.session.session", "kproxy.proxy.client"):
        which = subprocess.run(
            [sys.executable, "-c", f"import {module} as m; print(m.__file__)"],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert which.stdout.strip().endswith(".so"), which.stdout
    # What an operator asks of an installed kproxy (kproxy/build.py).
    version = subprocess.run(
        [sys.executable, "-m", "kproxy", "version"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.splitlines()[1] == "hot path: compiled", version.stdout
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *COMPILED_TESTS],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert tests.returncode == 0, tests.stdout[-5000:]
    assert " passed" in tests.stdout
