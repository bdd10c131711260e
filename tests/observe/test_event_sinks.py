"""Event sinks: fan-out of one record to every sink, keys, settings, kproxy's own
events producer kept out of its redirect figures, `kafka://` inputs."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from kproxy.config.settings import ConfigError, parse_config
from kproxy.observe.event_sink import EventRecord, SinkReport
from kproxy.observe.events import DRAIN_SECONDS, EventLog, event_key
from kproxy.observe.observability import Observability
from kproxy.protocol.walker import LeaderObservation


class ListSink:
    """Keeps what it is given (kproxy's own fan-out is under test, not a peer)."""

    name = "list"

    def __init__(self, fail: bool = False) -> None:
        self.records: list[EventRecord] = []
        self.fail = fail
        self.closed = False
        self.report: SinkReport | None = None

    def open(self, report: SinkReport) -> None:
        self.report = report

    def write(self, records: list[EventRecord]) -> None:
        if self.fail:
            raise OSError("no room")
        self.records.extend(records)
        assert self.report is not None
        for r in records:
            self.report.written(r.type)

    def tick(self) -> None:
        pass

    def flush(self, timeout: float) -> bool:
        return True

    def close(self, timeout: float) -> None:
        self.closed = True


def test_every_sink_gets_the_same_bytes_and_counts_its_own(tmp_path: Path) -> None:
    sink = ListSink()
    counted: list[tuple[str, str]] = []
    log = EventLog(
        tmp_path,
        sinks=[sink],
        instance="p-1",
        on_written=lambda s, t, n: counted.extend([(s, t)] * n),
    )
    log.emit("redirect", {"topic": "t", "partition": 3, "api": "Produce"})
    log.emit("connection", {"action": "open"})
    log.close()
    lines = [p.read_bytes() for p in log.files]
    assert b"".join(r.line + b"\n" for r in sink.records) == b"".join(lines)
    assert [r.key for r in sink.records] == [b"t-3", b"p-1"]
    assert sink.closed
    assert sorted(counted) == sorted(
        [("file", "redirect"), ("file", "connection"), ("list", "redirect"), ("list", "connection")]
    )
    assert log.written == {"redirect": 2, "connection": 2}


def test_a_failing_sink_counts_its_drops_and_the_other_still_writes(tmp_path: Path) -> None:
    bad = ListSink(fail=True)
    log = EventLog(tmp_path, sinks=[bad], instance="p")
    log.emit("a", {"n": 1})
    log.close()
    report = log.report("list")
    assert report is not None and report.dropped_count == 1
    assert log.report("file") is not None and log.report("file").written_counts == {"a": 1}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("event_type", "fields", "key"),
    [
        ("leader_change", {"topic": "orders", "partition": 0}, b"orders-0"),
        ("recovery", {"topic": None, "topic_id": "abc", "partition": 2}, b"abc-2"),
        ("redirect", {"topic": None, "topic_id": None, "partition": 2}, b"me"),
        ("connection", {"topic": "x", "partition": 1}, b"me"),
    ],
)
def test_event_keys(event_type: str, fields: dict[str, Any], key: bytes) -> None:
    assert event_key(event_type, fields, "me") == key


def cfg(events: dict[str, Any]) -> dict[str, Any]:
    return {"cluster": {"bootstrap_servers": ["a:1"]}, "events": events}


@pytest.mark.parametrize(
    ("events", "error"),
    [
        ({"sink": "disk"}, "events.sink.0: must be one of 'file' or 'kafka' (got 'disk')"),
        ({"sink": ["file", "file"]}, "events.sink: names a sink twice (got ['file', 'file'])"),
        ({"sink": []}, "events.sink: must not be empty (got [])"),
        (
            {"kafka": {"bootstrap_servers": "a:1,b"}},
            "events.kafka.bootstrap_servers: must be proxy or a list of host:port (got 'a:1,b')",
        ),
        (
            {"kafka": {"properties": {"client.id": "x"}}},
            "events.kafka.properties.client.id: is set by kproxy (use bootstrap_servers)",
        ),
    ],
)
def test_sink_settings_are_checked(events: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(cfg(events))
    assert str(caught.value) == error


def test_sink_settings_read() -> None:
    s = parse_config(
        cfg({"sink": "kafka", "kafka": {"bootstrap_servers": "a:1, b:2", "topic": "ev"}})
    )
    assert s.events.sink == ("kafka",)
    assert s.events.kafka.bootstrap_servers == (("a", 1), ("b", 2))
    assert parse_config(cfg({})).events.kafka.bootstrap_servers == "proxy"


def test_the_own_events_producer_is_not_a_client_in_the_figures(tmp_path: Path) -> None:
    pytest.importorskip("confluent_kafka")
    settings = parse_config(cfg({"sink": ["file", "kafka"], "dir": str(tmp_path)}))
    o = Observability(settings, runtime_collectors=False, instance="t-1")
    own = o.own_client_id
    assert own is not None and own.startswith("kproxy-events-t-1-") and len(own) > 20
    assert o.events is not None and o.events.queued == 0

    def obs(error: int, leader: int, epoch: int, hint: bool) -> LeaderObservation:
        return LeaderObservation("orders", None, 0, error, leader, epoch, hint)

    o.leaders(3, "app", None, [obs(0, 1, 5, False)], frozenset())  # Metadata: leader 1
    # Produce v10+: NOT_LEADER_OR_FOLLOWER with CurrentLeader 2 (KIP-951), to each client.
    o.leaders(0, own, 1, [obs(6, 2, 6, True)], frozenset({2}))
    o.leaders(0, own, 2, [obs(0, 2, 6, False)], frozenset())
    o.leaders(3, "app", None, [obs(0, 3, 7, False)], frozenset())
    o.leaders(0, "app", 3, [obs(6, 1, 8, True)], frozenset({1}))
    o.close()
    lines = [json.loads(x) for p in tmp_path.glob("*.jsonl") for x in p.read_text().splitlines()]
    assert [x["client_id"] for x in lines if x["type"] == "redirect"] == ["app"]
    assert [x["client_id"] for x in lines if x["type"] == "recovery"] == []
    assert o.metrics.total("kproxy_redirects_total") == 1
    # The leader changes it saw are the cluster's: 1 -> 2 (its own), 2 -> 3, 3 -> 1.
    assert o.metrics.total("kproxy_leader_changes_total") == 3


class BatchCountingSink(ListSink):
    name = "batches"

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def write(self, records: list[EventRecord]) -> None:
        self.batches.append(len(records))
        super().write(records)


def test_the_writer_is_not_woken_by_each_event() -> None:
    # A writer woken per event takes the GIL from the event loop at a random moment for
    # each one; drained on its own clock it takes what came meanwhile in one batch.
    sink = BatchCountingSink()
    log = EventLog(sinks=[sink], instance="p")
    assert log.flush()  # the sinks are open
    started = time.monotonic()
    for i in range(200):
        log.emit("a", {"n": i})
        time.sleep(0.0005)  # the event loop between two events, GIL released
    elapsed = time.monotonic() - started
    assert log.flush()
    assert sum(sink.batches) == 200
    # One batch per drain at most (plus the one flush asks for), not one per event.
    assert len(sink.batches) <= elapsed / DRAIN_SECONDS + 2, (sink.batches, elapsed)
    log.close()
    assert [json.loads(r.line)["n"] for r in sink.records] == list(range(200))
