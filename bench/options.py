"""What one benchmark run is asked to do: `python -m bench run` and `python -m bench ab`
fill an `Options`, and the harness, its rounds and its runs read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.peers import BENCH
from bench.upstreams import DEFAULT_PATHS

PAIRED_HELP = (
    "every round of a latency, consume or produce workload, the paths take "
    "TURNS turns each in one client process, the order rotated every turn (bench.paired; "
    "without TURNS: 200 for latency, 20 for produce, 10 for consume)"
)


@dataclass
class Options:
    quick: bool = False
    rounds: int = 3
    workloads: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=lambda: list(DEFAULT_PATHS))
    baseline_source: Path | None = None  # bench ab --baseline: that revision's checkout
    baseline_loop: str = "uvloop"  # the loop kproxy-base runs on (bench ab --standard-loop)
    # Sections added to the configuration of this tree's kproxy paths, not the
    # baseline's (bench ab --quota: a quota no client reaches).
    kproxy_config: dict[str, Any] = field(default_factory=dict)
    # The prefix this tree's kproxy puts before its clients' topics (bench ab --tenancy):
    # a consuming workload's topic is filled under it too.
    tenant_prefix: str = ""
    scale: float = 1.0
    out_json: Path = BENCH / "results.json"
    out_md: Path | None = BENCH / "RESULTS.md"
    workdir: Path | None = None
    run_timeout: float = 300.0
