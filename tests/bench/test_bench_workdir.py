"""What the benchmark leaves on disk: the brokers' data of a full run is gigabytes, so a
work directory the harness made itself is removed when the run ends, failed or not; one
the caller named (`--workdir`) is kept with the peers' logs. An A/B's baseline worktree
goes too."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import bench.harness
from bench.builds import checkout
from bench.harness import Harness, Options
from bench.peers import REPO


def harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workdir: Path | None) -> Harness:
    monkeypatch.setattr(bench.harness, "software_versions", dict)
    opts = Options(workloads=["latency"], paths=["direct"], out_json=tmp_path / "results.json",
                   out_md=None, workdir=workdir)  # fmt: skip
    return Harness(opts)


def broker_data(fail: bool) -> Any:
    """What `run_upstream` leaves: a broker's data in the work directory."""

    def run_upstream(self: Harness, name: str, group: object) -> None:
        (self.workdir / name).mkdir()
        (self.workdir / name / "00000000000000000000.log").write_bytes(b"x" * 4096)
        if fail:
            raise RuntimeError("the broker died")

    return run_upstream


@pytest.mark.parametrize("fail", [False, True])
def test_a_work_directory_of_its_own_is_removed_when_the_run_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: bool
) -> None:
    h = harness(tmp_path, monkeypatch, None)
    monkeypatch.setattr(Harness, "run_upstream", broker_data(fail))
    assert h.workdir.is_dir()
    if fail:
        with pytest.raises(RuntimeError, match="the broker died"):
            h.run()
    else:
        h.run()
    assert not h.workdir.exists()


def test_a_named_work_directory_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    named = tmp_path / "work"
    h = harness(tmp_path, monkeypatch, named)
    monkeypatch.setattr(Harness, "run_upstream", broker_data(False))
    h.run()
    assert (named / "tansu" / "00000000000000000000.log").is_file()


def test_the_baselines_worktree_leaves_nothing_behind() -> None:
    """`python -m bench ab --baseline REV` checks REV out in a temporary worktree; once
    the A/B ends neither the worktree nor the directory made for it is left."""
    with checkout("HEAD") as where:
        assert where is not None
        assert (where / "kproxy" / "__init__.py").is_file()
        parent = where.parent
    assert not parent.exists()
    worktrees = subprocess.run(["git", "-C", str(REPO), "worktree", "list"],
                               capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert str(where) not in worktrees


def test_an_interrupted_run_says_when_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m bench run` saves what an interrupted run measured (its SIGTERM handler
    raises KeyboardInterrupt); the results page then gives when it stopped, not "?"."""
    h = harness(tmp_path, monkeypatch, None)

    def interrupted(self: Harness, name: str, group: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Harness, "run_upstream", interrupted)
    with pytest.raises(KeyboardInterrupt):
        h.run()
    meta = h.results["meta"]
    assert meta["finished"] >= meta["started"]
    assert len(h.results["machine"]["load_average_end"]) == 3
