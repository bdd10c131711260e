"""`python -m bench.clients rate` against librdkafka's mock cluster: messages go out on
their schedule, never faster, and a message held back by a slow broker is late from
when it was due, not from when the client could finally send it (coordinated omission
avoided)."""

from __future__ import annotations

import json
from typing import Any

from bench.generate import run_generator
from tests.peers.mock_cluster import MockCluster

TOPIC = "fixed-rate"


def run_rate(cluster: MockCluster, count: int, rate: int, **client: Any) -> dict[str, Any]:
    argv = ["--targets", json.dumps([["direct", cluster.bootstraps, TOPIC]]),
            "--count", str(count), "--rate", str(rate), "--warmup", "5",
            "--client-config", json.dumps(client)]  # fmt: skip
    result: dict[str, Any] = run_generator("bench.clients", "rate", argv, 120)["direct"]
    return result


def test_the_schedule_holds_and_is_never_outrun() -> None:
    with MockCluster(brokers=1) as cluster:
        cluster.create_topic(TOPIC, 1, 1)
        result = run_rate(cluster, 600, 300)
    assert result["messages"] == 600
    assert result["offered_msg_per_s"] == 300
    # 600 messages due over 2 s: never delivered faster than offered.
    assert result["msg_per_s"] <= 300 * 1.01


def test_a_message_held_back_is_late_from_when_it_was_due() -> None:
    """A broker 100 ms away and a client queue of 10 messages: the client can move about
    100 messages a second of the 200 offered, so the last of 200 messages, due at 1 s,
    goes out near 2 s. Timed from its own send, each would read about 100 ms."""
    with MockCluster(brokers=1) as cluster:
        cluster.create_topic(TOPIC, 1, 1)
        cluster.set_rtt(1, 100)
        result = run_rate(cluster, 200, 200, **{"queue.buffering.max.messages": 10})
    assert result["messages"] == 200
    assert result["p50_ms"] >= 100
    assert result["max_ms"] >= 600
