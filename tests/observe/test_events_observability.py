"""What kproxy's observability writes to the event log: every event type with exactly
its documented fields, counts that agree with the metrics, drops and pending events
counted, request samples at their rate, and the fast lane reporting what the general
path reports.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kproxy.config.settings import ClusterSettings, EventSettings, MetricsSettings, Settings
from kproxy.observe.events import COMMON_FIELDS, EVENT_FIELDS, EVENT_TYPES
from kproxy.observe.observability import Observability
from kproxy.protocol.walker import LeaderObservation
from kproxy.session.identity import Authentication
from kproxy.session.inflight import ResponseSeen, response_seen
from tests.event_files import REPO, TS_RE, read_lines


def settings_for(tmp_path: Path, **events: Any) -> Settings:
    return Settings(
        cluster=ClusterSettings(bootstrap_servers=(("127.0.0.1", 9092),)),
        events=EventSettings(dir=tmp_path, **events),
        metrics=MetricsSettings(topic_labels=True),
    )


def obs(
    partition: int, error: int, leader: int | None, epoch: int | None, hint: bool
) -> LeaderObservation:
    return LeaderObservation("orders", None, partition, error, leader, epoch, hint)


def seen_response(
    api_key: int, version: int, client_id: str, received: float, upstream: float
) -> ResponseSeen:
    return response_seen(
        api_key, version, client_id, 100, received, upstream, None, frozenset(), 0, 0
    )


def drive(o: Observability) -> None:
    """One of everything, through the observer hooks the runtime calls."""
    o.node_discovered(1, "10.0.0.5:9092", "broker-1.kafka:9092")
    o.node_discovered(2, "10.0.0.6:9092", "broker-2.kafka:9092")
    o.connection_opened("node-1")
    o.leaders(3, "app", None, [obs(0, 0, 1, 5, False), obs(1, 0, 1, 5, False)], frozenset())
    done = 10.0
    o.responses_forwarded([seen_response(0, 11, "app", done - 0.004, 0.003)], done)
    # KIP-951: the new leader with its endpoint, and one without any leader.
    o.leaders(0, "app", 1, [obs(0, 6, 2, 6, True), obs(1, 6, None, None, False)], frozenset({2}))
    o.leaders(0, "app", 2, [obs(0, 0, None, None, False)], frozenset())
    o.leaders(3, "app", None, [obs(1, 0, 2, 6, False)], frozenset())
    o.leaders(0, "app", 2, [obs(1, 0, None, None, False)], frozenset())
    o.connection_closed("node-1", "client_closed", "User:alice", "127.0.0.1")
    o.authenticated("node-1", "127.0.0.1", Authentication("PLAIN", "User:alice", True, 0, False))
    o.switchover("fenced", "admin", "a", "b", {"connections": 2})
    summary = {"fence_seconds": 0.25, "seconds": 0.5, "drained": 1, "cut": 1, "unanswered": 2,
               "transactions_aborted": 1, "transactions_not_aborted": 0}  # fmt: skip
    o.switchover("completed", "admin", "a", "b", summary)
    o.leaders(0, "app", 2, [obs(0, 0, None, None, False)], frozenset())  # resumed on b
    o.switchover("refused", "reload", "b", "c", {"reason": "unknown", "why": "no cluster 'c'"})


def test_every_event_type_has_exactly_its_documented_fields(tmp_path: Path) -> None:
    o = Observability(
        settings_for(tmp_path, request_sample_rate=1.0),
        instance="test-1",
        runtime_collectors=False,
    )
    drive(o)
    o.close()
    lines = read_lines(tmp_path)
    types = {line["type"] for line in lines}
    assert types == set(EVENT_TYPES)
    for line in lines:
        assert list(line) == list(COMMON_FIELDS) + list(EVENT_FIELDS[line["type"]])
        assert line["schema"] == 1 and line["proxy"] == "test-1" and TS_RE.match(line["ts"])
    redirects = [x for x in lines if x["type"] == "redirect"]
    got = [(r["partition"], r["from_node"], r["to_node"], r["with_endpoint"]) for r in redirects]
    assert got == [(0, 1, 2, True), (1, 1, None, False)]
    (change0, change1) = [x for x in lines if x["type"] == "leader_change"]
    assert change0 | {"ts": None} == {
        "schema": 1,
        "type": "leader_change",
        "ts": None,
        "proxy": "test-1",
        "topic": "orders",
        "topic_id": None,
        "partition": 0,
        "old_leader": 1,
        "new_leader": 2,
        "old_epoch": 5,
        "new_epoch": 6,
        "source_api": "Produce",
    }
    assert change1["source_api"] == "Metadata"
    recoveries = [x for x in lines if x["type"] == "recovery"]
    assert [(r["partition"], r["client_id"], r["with_endpoint"]) for r in recoveries] == [
        (0, "app", True),
        (1, "app", False),
    ]
    assert all(r["ms"] >= 0 for r in recoveries)
    (sample,) = [x for x in lines if x["type"] == "request_sample"]
    assert sample | {"ts": None} == {
        "schema": 1,
        "type": "request_sample",
        "ts": None,
        "proxy": "test-1",
        "api": "Produce",
        "version": 11,
        "client_id": "app",
        "total_ms": 4.0,
        "upstream_ms": 3.0,
    }


def test_event_counts_agree_with_the_metrics(tmp_path: Path) -> None:
    o = Observability(settings_for(tmp_path, request_sample_rate=1.0), runtime_collectors=False)
    for _ in range(3):
        drive(o)
    o.close()
    counts = Counter(line["type"] for line in read_lines(tmp_path))
    m = o.metrics
    redirect_lines = [x for x in read_lines(tmp_path) if x["type"] == "redirect"]
    assert m.value("kproxy_events_dropped_total", {"sink": "file"}) == 0
    assert counts["leader_change"] == m.total("kproxy_leader_changes_total") == 2
    assert sum(1 for r in redirect_lines if r["to_node"] is not None) == m.total(
        "kproxy_redirects_total"
    )
    assert sum(1 for r in redirect_lines if r["to_node"] is None) == m.total(
        "kproxy_redirects_without_leader_total"
    )
    assert counts["recovery"] == m.total("kproxy_recoveries_total") == 6
    assert counts["node_discovered"] == m.value("kproxy_nodes_discovered_total") == 6
    assert counts["connection"] == m.total("kproxy_connections_opened_total") + m.total(
        "kproxy_connections_closed_total"
    )
    for event_type, n in counts.items():
        assert m.value("kproxy_events_written_total", {"sink": "file", "type": event_type}) == n
    assert o.summary().startswith("2 leader changes, 3 redirects to a new leader (3 with")


def test_dropped_events_are_counted_in_the_metric(tmp_path: Path) -> None:
    o = Observability(
        settings_for(tmp_path, queue_size=1, request_sample_rate=0.0), runtime_collectors=False
    )
    assert o.events is not None
    o.events.close()  # nothing more can be written: every event is a drop
    o.node_discovered(1, "a:1", "b:1")
    o.connection_opened("bootstrap")
    assert o.metrics.value("kproxy_events_dropped_total", {"sink": "file"}) == 2
    assert o.metrics.value("kproxy_nodes_discovered_total") == 1


def test_pending_counts_the_queue_and_the_batch_the_writer_holds(tmp_path: Path) -> None:
    """`kproxy_events_pending` is 0 only once every event emitted so far is in its sinks'
    hands: a batch taken off the queue but not yet written still counts (what a reader
    that waits for the sinks to catch up relies on)."""
    o = Observability(settings_for(tmp_path, request_sample_rate=0.0), runtime_collectors=False)
    assert o.events is not None
    log = o.events
    sink = log.sinks[0]
    entered, release = threading.Event(), threading.Event()
    write = sink.write

    def held_write(records: Any) -> None:
        entered.set()
        assert release.wait(10)
        write(records)

    sink.write = held_write  # type: ignore[method-assign]
    pending = lambda: o.metrics.value("kproxy_events_pending")  # noqa: E731
    assert pending() == 0
    o.node_discovered(1, "a:1", "b:1")
    o.node_discovered(2, "a:2", "b:2")
    assert entered.wait(10)  # the writer holds both, the queue is empty
    assert log.queued == 0
    assert pending() == log.pending == 2
    o.connection_opened("bootstrap")
    assert pending() == 3
    assert read_lines(tmp_path) == []
    release.set()
    assert log.flush()
    assert pending() == 0
    assert len(read_lines(tmp_path)) == 3
    o.close()


def test_request_samples_follow_the_rate_and_disabled_events_write_nothing(
    tmp_path: Path,
) -> None:
    # At rate 0.5 a draw u gives a gap of 1 + floor(log2(1 / (1 - u))) responses: 0.5 ->
    # 2, 0.0 -> 1, 0.75 -> 3. So of five responses the 2nd and 3rd are sampled.
    draws = iter([0.5, 0.0, 0.75])
    o = Observability(
        settings_for(tmp_path / "a", request_sample_rate=0.5),
        sample=lambda: next(draws),
        runtime_collectors=False,
    )
    o.response(1, 16, "c", 0.5, 0.5)  # one at a time, or as what a read forwarded
    o.responses_forwarded([seen_response(1, 16, "c", 0.5, 0.5)] * 2, 1.0)
    o.responses_forwarded([seen_response(1, 16, "c", 0.5, 0.5)], 1.0)
    o.responses_forwarded([seen_response(1, 16, "c", 0.5, 0.5)], 1.0)
    o.close()
    assert [x["type"] for x in read_lines(tmp_path / "a")] == ["request_sample"] * 2
    off = Observability(settings_for(tmp_path / "b", enabled=False), runtime_collectors=False)
    drive(off)
    off.close()
    assert off.events is None
    assert not (tmp_path / "b").exists()
    assert off.metrics.total("kproxy_leader_changes_total") == 2


@pytest.mark.parametrize("rate", [0.01, 0.2, 0.9])
def test_each_response_is_sampled_with_the_rate_whoever_else_is_sampled(
    tmp_path: Path, rate: float
) -> None:
    """The gaps between samples make each response a sample with probability `rate`,
    independently: the count over many responses, and the count of the responses that
    follow a sampled one, are binomial with that rate (within five standard
    deviations; the draws are seeded). kproxy's own producer's responses count in the
    gaps and are never sampled."""
    o = Observability(
        settings_for(tmp_path, request_sample_rate=rate, queue_size=40_000),  # none dropped
        sample=random.Random(7).random,
        runtime_collectors=False,
    )
    o.own_client_id = "kproxy-events"
    clients = ["kproxy-events" if i % 10 == 9 else "app" for i in range(40_000)]
    for i, client in enumerate(clients):  # each response's index as its version
        o.responses_forwarded([seen_response(1, i, client, 0.0, 0.001)], 0.002)
    o.close()
    samples = [x for x in read_lines(tmp_path) if x["type"] == "request_sample"]
    assert samples and {x["client_id"] for x in samples} == {"app"}
    sampled = {x["version"] for x in samples}
    theirs = [i in sampled for i, client in enumerate(clients) if client == "app"]
    after = [s for prev, s in itertools.pairwise(theirs) if prev]
    for got in (theirs, after):
        n = len(got)
        sd = math.sqrt(n * rate * (1 - rate))
        assert abs(sum(got) - n * rate) <= 5 * sd, (sum(got), n, rate)


def test_docs_list_every_event_type_and_field() -> None:
    doc = (REPO / "docs" / "events.md").read_text(encoding="utf-8")
    for event_type, fields in EVENT_FIELDS.items():
        section = doc.split(f"### `{event_type}`", 1)
        assert len(section) == 2, f"docs/events.md has no section for {event_type}"
        body = re.split(r"\n##+ ", section[1], maxsplit=1)[0]
        documented = re.findall(r"^\| `([a-z_]+)` \|", body, re.M)
        assert documented == list(fields), event_type
    for field in COMMON_FIELDS:
        assert f"| `{field}` |" in doc
