"""The soak's accounting (`python -m bench soak`): its ledger tells a record lost or in
the log twice from one a consumer merely read again, its clients report every window
and a full ledger while leaders move under them, and its slope and section read what
the run measured."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading

from bench.formats import replace_marked_section
from bench.soak import add_arguments, assemble
from bench.soak_report import END_MARKER, MARKER, render_section, slope_per_hour
from bench.soak_traffic import Ledger
from tests.peers.mock_cluster import MockCluster

TOPIC = "soak"


def test_the_ledger_counts_a_loss_and_a_duplicate_not_a_reread() -> None:
    ledger = Ledger()
    for seq in range(4):
        ledger.acknowledge(seq)
    ledger.consume(0, 0, 0)  # read before or after its acknowledgement: both count
    ledger.consume(0, 1, 1)
    ledger.consume(0, 1, 1)  # the same offset again: a consumer's reread
    ledger.consume(0, 2, 1)  # the same record at a new offset: in the log twice
    ledger.consume(1, 0, 5)  # read, and its acknowledgement comes later
    ledger.acknowledge(5)
    ledger.consume(1, 1, 6)  # read, never acknowledged (its delivery failed)
    assert ledger.unread == 2  # 2 and 3
    assert ledger.verdict() == {
        "acknowledged": 5,
        "failed": 0,
        "lost": 2,
        "duplicated": 1,
        "read_unacknowledged": 1,
        "reread": 1,
    }


def test_the_slope_is_per_hour_and_none_without_two_times() -> None:
    assert slope_per_hour([(0.0, 10.0), (1800.0, 11.0), (3600.0, 12.0)]) == 2.0
    assert slope_per_hour([(0.0, 10.0), (0.0, 12.0)]) is None
    assert slope_per_hour([(5.0, 1.0)]) is None


def run_traffic(bootstrap: str, seconds: float, window: float) -> list[dict[str, object]]:
    argv = [sys.executable, "-m", "bench.soak_traffic", "--bootstrap", bootstrap,
            "--topic", TOPIC, "--seconds", str(seconds), "--rate", "200",
            "--size", "100", "--window", str(window), "--drain-seconds", "30"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_clients_report_each_window_and_miss_nothing_while_leaders_move() -> None:
    with MockCluster(brokers=3) as cluster:
        cluster.create_topic(TOPIC, 3, 3)
        moving = threading.Event()

        def move_leaders() -> None:
            turn = 0
            while not moving.wait(0.3):
                cluster.set_leader(TOPIC, turn % 3, 1 + (turn // 3) % 3)
                turn += 1

        mover = threading.Thread(target=move_leaders, daemon=True)
        mover.start()
        try:
            lines = run_traffic(cluster.bootstraps, seconds=3.0, window=1.0)
        finally:
            moving.set()
            mover.join(5)
    windows = [line for line in lines if "window" in line]
    assert [w["window"] for w in windows] == list(range(len(windows)))
    assert len(windows) >= 2
    final = lines[-1]["final"]
    assert isinstance(final, dict)
    # 600 messages due over 3 s; every one acknowledged and read, none twice in the log.
    assert final["acknowledged"] == 600
    assert final["lost"] == 0
    assert final["duplicated"] == 0
    assert final["failed"] == 0


def result(lost: int) -> dict[str, object]:
    settings = {"seconds": 3600.0, "heap": "384m", "partitions": 6, "rate": 1000.0, "size": 1024,
                "chaos_every": 60.0, "window": 300.0}  # fmt: skip
    window = {"window": 0, "chaos": ["leader move", "broker kill", "leader move"],
              "produce_ms": {"n": 300000, "p50": 2.0, "p99": 9.0, "p999": 40.0, "max": 900.0},
              "end_to_end_ms": {"n": 300000, "p99": 12.0, "p999": 60.0},
              "rss_mb": 61.5, "fds": 40}  # fmt: skip
    samples = [{"t": 0.0, "rss_mb": 60.0, "fds": 38, "cpu_s": 1.0},
               {"t": 600.0, "rss_mb": 61.5, "fds": 40, "cpu_s": 61.0}]  # fmt: skip
    return {
        "command": "python -m bench soak",
        "cpus": 2,
        "settings": settings,
        "windows": [window],
        "chaos": [{"kind": "broker kill", "error": None}],
        "samples": samples,
        "ledger": {
            "acknowledged": 300000,
            "failed": 0,
            "lost": lost,
            "duplicated": 0,
            "read_unacknowledged": 0,
            "reread": 12,
        },
        "client_errors": [],
        "slopes": {"rss_mb_per_hour": 0.5, "fds_per_hour": None},
        "kproxy_cpu_s": 60.0,
    }


def test_the_section_shows_each_window_and_the_ledger_and_replaces_itself() -> None:
    section = render_section(result(lost=3))
    assert section.startswith(MARKER) and section.rstrip().endswith(END_MARKER)
    assert "| 0-5 | 2 leader move, 1 broker kill | 2.00 | 9.00 | 40.0 | 900 |" in section
    assert "**3 lost**" in section
    assert "RSS +0.50 MB an hour" in section and "descriptors - an hour" in section
    assert "100 millicores" in section
    page = "# Results\n\n## TLS\n\ntext\n"
    once = replace_marked_section(page, section, MARKER, END_MARKER, "## Soak")
    again = render_section(result(lost=0))
    twice = replace_marked_section(once, again, MARKER, END_MARKER, "## Soak")
    assert twice.count("## Soak") == 1 and "**0 lost**" in twice and "**3 lost**" not in twice
    assert twice.startswith(page.rstrip("\n"))


def test_a_last_part_window_is_added_only_when_the_run_is_not_whole_windows() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    window = {"produce_ms": {"n": 5}, "end_to_end_ms": {"n": 5}}
    tail = {"produce_ms": {"n": 2}, "end_to_end_ms": {"n": 2}}
    lines = [{"window": 0, **window}, {"final": {}, "tail": tail, "errors": []}]
    samples = [{"t": t, "rss_mb": 50.0, "fds": 20, "cpu_s": t / 10} for t in (0.0, 40.0, 70.0)]
    whole = assemble(parser.parse_args(["--seconds", "60", "--window", "60"]), lines, samples, [])
    assert [w["window"] for w in whole["windows"]] == [0]
    part = assemble(parser.parse_args(["--seconds", "70", "--window", "60"]), lines, samples, [])
    assert [w["window"] for w in part["windows"]] == [0, 1]
    assert part["windows"][1]["produce_ms"]["n"] == 2
