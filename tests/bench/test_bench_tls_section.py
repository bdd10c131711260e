"""The TLS benchmark rewrites only its own section of bench/RESULTS.md: the sections
after it (Fetch streaming, written by hand from bench.fetch_stream_bench) stay, and a
``--quick`` run, too small to stand for the record, writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import bench.tls_bench
from bench.tls_bench import END_MARKER, MARKER, render_section, replace_section, summarize

FETCH_SECTION = "## Fetch responses streamed\n\nWritten by `python -m bench.fetch_stream_bench`.\n"
MAIN = "# kproxy benchmark results\n\n## Targets\n\n| a | b |\n"


def rows(mb_per_s: float = 100.0) -> list[dict[str, Any]]:
    """What `measure` returns for one round of direct and kproxy."""
    out = []
    for path, ratio in (("direct", 1.0), ("kproxy", 0.9)):
        out += [
            {
                "round": 0,
                "path": path,
                "workload": kind,
                "mb_per_s": mb_per_s * ratio,
                "cpu_s_per_gb": 3.0,
            }
            for kind in ("produce", "consume")
        ]
        out.append({"round": 0, "path": path, "workload": "latency", "p99_ms": 1 / ratio,
                    "p50_ms": 0.5, "cpu_us_per_request": 120.0})  # fmt: skip
    return out


def result(mb_per_s: float) -> dict[str, Any]:
    """What `main` renders: `summarize` of one round, with what it notes before the run."""
    return summarize(rows(mb_per_s), {}, 5) | {
        "when": "2026-11-30 07:00 UTC",  # fixed: a section rendered twice must match
        "load_before": "0.50 0.40 0.30",
        "kproxy": "0.1.0 @ abc1234",
    }


def test_a_section_written_before_the_end_marker_keeps_what_follows_it() -> None:
    old_tls = MARKER + "\n## TLS\n\nold figures 111.11\n"
    text = MAIN + "\n" + old_tls + "\n" + FETCH_SECTION
    new = replace_section(text, render_section(result(150.0)))
    assert new.startswith(MAIN)
    assert "111.11" not in new
    assert "150.00 (1.00" in new and "135.00 (0.90" in new
    assert new.endswith(FETCH_SECTION)
    assert new.count(MARKER) == 1 and new.count(END_MARKER) == 1


def test_rewriting_the_section_replaces_only_it() -> None:
    text = MAIN + "\n" + render_section(result(150.0)) + "\n" + FETCH_SECTION
    again = replace_section(text, render_section(result(170.0)))
    assert "150.00" not in again and "170.00 (1.00" in again
    assert again.startswith(MAIN) and again.endswith(FETCH_SECTION)
    assert replace_section(again, render_section(result(170.0))) == again


def test_a_file_without_the_section_gains_it_at_the_end() -> None:
    new = replace_section(MAIN, render_section(result(150.0)))
    assert new.startswith(MAIN) and new.rstrip().endswith(END_MARKER)


@pytest.mark.parametrize("quick", [True, False])
def test_only_a_full_run_writes_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], quick: bool
) -> None:
    md, js = tmp_path / "RESULTS.md", tmp_path / "tls_results.json"
    md.write_text(MAIN + "\n" + MARKER + "\n## TLS\n\nold figures 111.11\n\n" + FETCH_SECTION)
    monkeypatch.setattr(bench.tls_bench, "RESULTS_MD", md)
    monkeypatch.setattr(bench.tls_bench, "RESULTS_JSON", js)
    asked: list[tuple[int, int]] = []

    def measure(paths: list[str], rounds: int, produce: int, latency: int) -> Any:
        asked.append((rounds, produce))
        return rows(), {}

    monkeypatch.setattr(bench.tls_bench, "measure", measure)
    monkeypatch.setattr(bench.tls_bench, "kproxy_revision", lambda: "0.1.0 @ abc1234")
    loads = iter(["0.10 0.20 0.30", "9.99 9.99 9.99"])  # before the run, then after it
    monkeypatch.setattr(bench.tls_bench, "load_average", lambda: next(loads))
    assert bench.tls_bench.main(["--quick"] if quick else []) == 0
    if quick:
        assert "| kproxy | 90.00 (0.90, 0.90-0.90)" in capsys.readouterr().out
        assert asked == [(2, 30_000)]
        assert "111.11" in md.read_text() and not js.exists()
    else:
        assert asked == [(5, 1_000_000)]
        assert "111.11" not in md.read_text() and "| kproxy | 90.00 (0.90" in md.read_text()
        assert md.read_text().endswith(FETCH_SECTION) and js.exists()
        assert "kproxy 0.1.0 @ abc1234, 2 CPUs, load before 0.10 0.20 0.30;" in md.read_text()
