"""The event log's writer: schema fields, rotation by size and time, drops that are
counted (what kproxy writes to it: test_events_observability.py)."""

from __future__ import annotations

import datetime
import json
import re
import time
from pathlib import Path

import pytest

from kproxy.observe.event_file import file_name
from kproxy.observe.events import (
    COMMON_FIELDS,
    SCHEMA_VERSION,
    EventLog,
    format_ts,
    instance_id,
    safe_name,
)
from tests.clock import Clock
from tests.event_files import NAME_RE, T0, TS_RE, read_lines, stamp
from tests.peers.net import wait_until


def test_lines_carry_schema_type_ts_and_proxy(tmp_path: Path) -> None:
    clock = Clock(T0)
    log = EventLog(tmp_path, instance="host-1", clock=clock)
    assert log.emit("connection", {"action": "open", "listener": "bootstrap", "cause": None})
    clock.advance(1.5)
    assert log.emit("recovery", {"topic": "t", "ms": 1.25, "client_id": "é"})
    log.close()
    first, second = read_lines(tmp_path)
    assert list(first)[:4] == list(COMMON_FIELDS)
    assert first == {
        "schema": SCHEMA_VERSION,
        "type": "connection",
        "ts": format_ts(T0),
        "proxy": "host-1",
        "action": "open",
        "listener": "bootstrap",
        "cause": None,
    }
    assert TS_RE.match(first["ts"])
    parsed = datetime.datetime.strptime(second["ts"], "%Y-%m-%dT%H:%M:%S.%f%z")
    assert parsed.timestamp() == pytest.approx(T0 + 1.5)
    assert second["client_id"] == "é"
    assert log.written == {"connection": 1, "recovery": 1}
    assert log.dropped == 0


def test_file_names_and_instance_ids() -> None:
    assert file_name(0.0, "h-1", 7) == "events-19700101T000000-h-1-000007.jsonl"
    assert safe_name("pod/with spaces:and.dots") == "pod_with_spaces_and.dots"
    assert safe_name("///") == "kproxy"
    assert re.fullmatch(r"[A-Za-z0-9._-]+-\d+", instance_id())


def test_rotation_by_size_keeps_whole_lines_and_every_event(tmp_path: Path) -> None:
    log = EventLog(tmp_path, instance="p", max_file_bytes=600)
    for i in range(100):
        log.emit("request_sample", {"api": "Produce", "version": 11, "client_id": f"c{i}"})
    log.close()
    files = sorted(tmp_path.glob("*.jsonl"))
    assert len(files) > 10
    assert [NAME_RE.match(f.name).group(3) for f in files] == [  # type: ignore[union-attr]
        f"{i:06d}" for i in range(len(files))
    ]
    for f in files:
        data = f.read_bytes()
        assert 0 < len(data) <= 600
        assert data.endswith(b"\n")
    lines = read_lines(tmp_path)
    assert [line["client_id"] for line in lines] == [f"c{i}" for i in range(100)]
    assert log.files == files


def test_a_line_larger_than_a_file_goes_alone_into_its_own(tmp_path: Path) -> None:
    log = EventLog(tmp_path, instance="p", max_file_bytes=200)
    log.emit("a", {"n": 1})
    log.emit("big", {"blob": "x" * 500})
    log.emit("a", {"n": 2})
    log.close()
    files = sorted(tmp_path.glob("*.jsonl"))
    assert [len(f.read_text().splitlines()) for f in files] == [1, 1, 1]
    assert [line["type"] for line in read_lines(tmp_path)] == ["a", "big", "a"]


def test_rotation_by_time_and_idle_files_are_closed(tmp_path: Path) -> None:
    clock = Clock(T0)
    log = EventLog(tmp_path, instance="p", rotate_seconds=60, clock=clock)
    log.emit("a", {"n": 1})
    assert log.flush()
    first = log.current_file
    assert first is not None
    assert NAME_RE.match(first.name).group(1) == stamp(T0)  # type: ignore[union-attr]
    clock.advance(30)
    log.emit("a", {"n": 2})
    assert log.flush()
    assert log.current_file == first  # younger than 60 s: same file
    clock.advance(31)
    log.emit("a", {"n": 3})
    assert log.flush()
    second = log.current_file
    assert second is not None and second != first
    assert NAME_RE.match(second.name).group(1) == stamp(T0 + 61)  # type: ignore[union-attr]
    # With no events, a file past its age is closed anyway; the next event opens one.
    clock.advance(61)
    wait_until(lambda: log.current_file is None, 10, 0.005, "the idle file closed")
    log.emit("a", {"n": 4})
    log.close()
    files = sorted(tmp_path.glob("*.jsonl"))
    assert [[json.loads(x)["n"] for x in f.read_text().splitlines()] for f in files] == [
        [1, 2],
        [3],
        [4],
    ]


def test_full_queue_drops_and_counts_and_never_blocks(tmp_path: Path) -> None:
    dropped: list[int] = []
    written: list[str] = []
    log = EventLog(
        tmp_path,
        instance="p",
        queue_size=5,
        autostart=False,  # a writer that does not keep up at all
        on_dropped=lambda sink, n: dropped.append(n),
        on_written=lambda sink, t, n: written.extend([t] * n),
    )
    started = time.perf_counter()
    accepted = [log.emit("a", {"n": i}) for i in range(10_000)]
    elapsed = time.perf_counter() - started
    assert accepted == [True] * 5 + [False] * 9_995
    assert log.dropped == sum(dropped) == 9_995
    assert elapsed < 2.0  # 10,000 emits against a full queue: no waiting anywhere
    log.close()
    assert [line["n"] for line in read_lines(tmp_path)] == [0, 1, 2, 3, 4]
    assert written == ["a"] * 5
    # After close, events are dropped, and counted.
    assert log.emit("a", {"n": 99}) is False
    assert log.dropped == 9_996


def test_unwritable_directory_counts_drops_and_the_writer_survives(tmp_path: Path) -> None:
    target = tmp_path / "events"
    dropped: list[int] = []
    log = EventLog(target, instance="p", on_dropped=lambda sink, n: dropped.append(n))
    target.rmdir()
    target.write_text("not a directory")  # mkdir and open now fail
    log.emit("a", {"n": 1})
    assert log.flush()
    assert log.dropped == 1
    target.unlink()
    log.emit("a", {"n": 2})  # the writer is still alive and writes again
    log.close()
    assert [line["n"] for line in read_lines(target)] == [2]
    assert sum(dropped) == 1


def test_an_event_that_is_not_json_is_dropped_and_counted(tmp_path: Path) -> None:
    log = EventLog(tmp_path, instance="p")
    log.emit("a", {"bad": object()})
    log.emit("a", {"n": 1})
    log.close()
    assert log.dropped >= 1
    assert log.written.get("a", 0) + log.dropped == 2


def test_close_is_idempotent_and_flushes(tmp_path: Path) -> None:
    log = EventLog(tmp_path, instance="p")
    for i in range(1000):
        log.emit("a", {"n": i})
    log.close()
    log.close()
    assert len(read_lines(tmp_path)) == 1000


def test_invalid_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        EventLog(tmp_path, queue_size=0, autostart=False)
