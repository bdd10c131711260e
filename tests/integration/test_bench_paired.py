"""Paired benchmark rounds (`bench.paired`, `bench.clients`) against a real
Tansu broker: every path's client does exactly its count, in the turns asked for; a
consumer's turn reads on from where its last turn paused, never a message twice or one
skipped; a proxy path on Tansu writes to a broker of its own, which holds its path's
messages and no other's; and a whole paired A/B round records each path as `bench.harness`
records a run, kproxy's CPU and request counters included."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

import bench.harness
from bench.clients import WARMUP, build_parser, consume, latency, produce
from bench.harness import Options
from bench.paired import PairedHarness
from bench.tansu_upstream import TansuUpstream
from bench.upstreams import MAIN
from tests.peers.tansu import TansuBroker

pytestmark = pytest.mark.peers

COUNT = 600
SEGMENTS = 4
SIZE = 200


def create(bootstrap: str, *topics: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic, future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).items():
        future.result(30)
        assert topic


def args(kind: str) -> argparse.Namespace:
    argv = [kind, "--targets", "[]", "--count", str(COUNT), "--segments", str(SEGMENTS)]
    return build_parser().parse_args([*argv, "--size", str(SIZE), "--acks", "1", "--timeout", "60"])


def two_paths(bootstrap: str, stem: str) -> list[list[str]]:
    """Paths a and b, both to the broker, each with a topic of its own (created)."""
    targets = [["a", bootstrap, f"{stem}-a"], ["b", bootstrap, f"{stem}-b"]]
    create(bootstrap, *(topic for _path, _bootstrap, topic in targets))
    return targets


def messages_in(bootstrap: str, topic: str) -> int:
    """How many messages the topic holds, read to its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-paired-check",
                         "enable.partition.eof": True})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    count = 0
    try:
        while True:
            message = consumer.poll(30)
            assert message is not None, f"{topic}: no end reached after {count} messages"
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return count
            count += 1
    finally:
        consumer.close()


def test_produce_turns_write_each_paths_count(tansu: TansuBroker) -> None:
    targets = two_paths(tansu.bootstrap, "paired-produce")
    results = produce(args("produce"), targets)
    for path, _bootstrap, topic in targets:
        assert results[path]["messages"] == COUNT
        assert len(results[path]["turn_values"]) == SEGMENTS
        assert results[path]["msg_per_s"] > 0
        assert messages_in(tansu.bootstrap, topic) == COUNT + WARMUP  # warm-up included


def test_consume_turns_read_on_from_where_the_last_one_paused(tansu: TansuBroker) -> None:
    from confluent_kafka import Producer

    targets = two_paths(tansu.bootstrap, "paired-consume")
    producer = Producer({"bootstrap.servers": tansu.bootstrap})
    for _path, _bootstrap, topic in targets:
        for i in range(COUNT + WARMUP):
            producer.produce(topic, b"%0*d" % (SIZE, i), partition=0)
    assert producer.flush(30) == 0
    # The generator raises if a turn reads an offset other than the next one.
    results = consume(args("consume"), targets)
    for path, _bootstrap, _topic in targets:
        assert results[path]["messages"] == COUNT
        assert results[path]["bytes"] == COUNT * SIZE  # only what the turns read
        assert len(results[path]["turn_values"]) == SEGMENTS


def topics_of(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics)


def test_a_proxy_path_on_tansu_fills_a_broker_of_its_own(tmp_path: Path) -> None:
    """What lets produce on Tansu run paired: direct's turns fill the main broker, the
    kproxy path's turns its own, the same count each; a reset empties both."""
    up = TansuUpstream(tmp_path)
    up.own_broker_paths = ("kproxy-uvloop",)
    up.start()
    proxy = None
    try:
        assert up.side("direct") == MAIN and up.side("kproxy-uvloop") == "kproxy-uvloop"
        assert up.sides() == [MAIN, "haproxy", "kproxy-uvloop"]
        own = up.fill_bootstrap("kproxy-uvloop")
        assert own == up.proxy_target_of("kproxy-uvloop") != up.direct_bootstrap()
        proxy = up.start_proxy("kproxy-uvloop")
        targets = [["direct", up.direct_bootstrap(), "own-direct"],
                   ["kproxy-uvloop", proxy.bootstrap, "own-kproxy"]]  # fmt: skip
        for path, _bootstrap, topic in targets:
            up.create_topic(topic, 1, up.side(path))
        results = produce(args("produce"), targets)
        assert {p: r["messages"] for p, r in results.items()} == {
            "direct": COUNT, "kproxy-uvloop": COUNT
        }  # fmt: skip
        assert messages_in(up.direct_bootstrap(), "own-direct") == COUNT + WARMUP
        assert messages_in(own, "own-kproxy") == COUNT + WARMUP
        assert "own-kproxy" not in topics_of(up.direct_bootstrap())
        assert "own-direct" not in topics_of(own)
        up.reset()  # the same ports, nothing kept
        assert up.proxy_target_of("kproxy-uvloop") == own
        assert "own-kproxy" not in topics_of(own)
    finally:
        if proxy is not None:
            proxy.stop()
        up.stop()


def test_latency_turns_time_every_round_trip(tansu: TansuBroker) -> None:
    targets = two_paths(tansu.bootstrap, "paired-latency")
    results = latency(args("latency"), targets)
    for path, _bootstrap, _topic in targets:
        assert results[path]["messages"] == COUNT
        assert len(results[path]["turn_values"]) == SEGMENTS
        assert 0 < results[path]["p50_ms"] <= results[path]["p99_ms"]


def test_a_paired_round_records_every_path_as_a_run_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """direct and kproxy in one paired latency A/B of two rounds, on the harness's own
    Tansu (and haproxy, its side left out of the paths)."""
    monkeypatch.setattr(bench.harness, "software_versions", dict)
    opts = Options(workloads=["latency"], paths=["direct", "kproxy-uvloop"], rounds=2,
                   scale=0.08, out_json=tmp_path / "results.json", out_md=None,)  # fmt: skip
    PairedHarness(opts, segments=2).run()
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["meta"]["paired_segments"] == 2
    runs = results["workloads"]["latency"]["runs"]
    assert [(r["round"], r["path"]) for r in runs] == [
        (0, "direct"), (0, "kproxy-uvloop"), (1, "direct"), (1, "kproxy-uvloop")
    ]  # fmt: skip
    for r in runs:
        assert r["ok"], r
        assert r["result"]["messages"] == 400
        # The host's steal over the round's turns, every path's (bench.steal).
        assert 0.0 <= r["steal"] <= 1.0
        assert len(r["result"]["turn_values"]) == 2
    for r in runs[1::2]:
        assert r["proxy"]["cpu_seconds"] > 0
        # Its own requests: the 400 round trips and their warm-up, and the client's
        # metadata and version requests, not the other path's.
        assert 400 + WARMUP <= r["kproxy"]["requests"] < 400 + WARMUP + 20
