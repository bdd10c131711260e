"""`clusters` and `switchover`: several upstream clusters, one served, and their reload."""

from __future__ import annotations

from typing import Any

import pytest

from kproxy.config.reload_table import plan
from kproxy.config.settings import ConfigError, parse_config

TWO = {
    "blue": {"bootstrap_servers": ["blue-1:9092"]},
    "green": {"bootstrap_servers": ["green-1:9092"], "dial_overrides": {"green-1": "10.0.2.5"}},
}


def with_clusters(**switchover: Any) -> dict[str, Any]:
    return {"clusters": TWO, "switchover": switchover}


def error(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as raised:
        parse_config(data)
    return str(raised.value)


def test_the_active_cluster_is_what_the_single_cluster_settings_read() -> None:
    first = parse_config(with_clusters())
    assert first.active_name() == "blue"
    assert first.cluster.bootstrap_servers == (("blue-1", 9092),)
    green = parse_config(with_clusters(active="green"))
    assert green.active_name() == "green"
    assert green.cluster.dial_address("green-1", 9092) == ("10.0.2.5", 9092)
    assert list(green.upstreams()) == ["blue", "green"]
    single = parse_config({"cluster": {"bootstrap_servers": ["k:9092"]}})
    assert single.active_name() == "default" and list(single.upstreams()) == ["default"]
    assert single.switchover.failover.enabled is False  # failover is off by default


def test_what_is_refused() -> None:
    assert error(with_clusters(active="red")) == (
        "switchover.active: names no cluster of clusters (blue, green)"
    )
    both = {**with_clusters(), "cluster": {"bootstrap_servers": ["other:9092"]}}
    assert error(both) == "cluster: give one cluster or several clusters, not both"
    bad_name = {"clusters": {"no spaces": {"bootstrap_servers": ["k:9092"]}}}
    assert error(bad_name).startswith(
        'clusters."no spaces": a cluster\'s name is 1-63 letters, digits'
    )
    unknown = {"clusters": {"blue": {"bootstrap_server": ["k:9092"]}}}
    assert error(unknown).startswith("clusters.blue.bootstrap_server: unknown key")


def test_a_reload_that_names_another_cluster_is_a_switchover() -> None:
    old = parse_config(with_clusters(active="blue"))
    change = plan(old, parse_config(with_clusters(active="green")))
    assert "switchover.active" in change.applied and change.restart == []
    assert change.effective.active_name() == "green"
    added = {**TWO, "red": {"bootstrap_servers": ["red-1:9092"]}}
    change = plan(old, parse_config({"clusters": added, "switchover": {"active": "blue"}}))
    assert change.applied == ["clusters"] and change.restart == []
    assert list(change.effective.upstreams()) == ["blue", "green", "red"]
    assert change.effective.active_name() == "blue"
