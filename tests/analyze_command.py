"""`kproxy analyze` run as an operator runs it: a subprocess on local Spark (two cores),
its output directory's summary.json read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.kproxy_process import REPO

# Spark's driver binds loopback only; the job imports kproxy from this tree.
SPARK_ENV = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}


def run_analyze(
    inputs: list[str], out: Path, timeout: float = 600
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """The finished run (exit 0 asserted) and its summary.json."""
    result = subprocess.run(
        [sys.executable, "-m", "kproxy", "analyze", *inputs, "--out", str(out),
         "--master", "local[2]"],
        capture_output=True, text=True, timeout=timeout, env=SPARK_ENV, cwd=out.parent,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return result, summary
