"""A switchover's address map: node N keeps node N's kproxy port whichever cluster it
belongs to, and nothing of the old cluster is dialled or named afterwards."""

from __future__ import annotations

from kproxy.config.settings import parse_config
from kproxy.runtime.mapping import AddressMap


def test_node_ports_stay_and_the_old_clusters_nodes_are_forgotten() -> None:
    settings = parse_config(
        {
            "clusters": {
                "a": {"bootstrap_servers": ["a-1:9092"], "dial_overrides": {"a-1": "10.0.1.1"}},
                "b": {"bootstrap_servers": ["b-1:9092"], "dial_overrides": {"b-1": "10.0.2.1"}},
            },
            "listeners": {"broker_port_base": 9100},
        }
    )
    addresses = AddressMap(settings.cluster, settings.listeners)
    addresses.learn(1, "a-1", 9092, True)
    addresses.listener_bound(1, 9101)
    assert addresses.node_dial_target(1) == ("10.0.1.1", 9092, "a-1")

    addresses.serve_cluster(settings.clusters["b"])
    assert addresses.node_dial_target(1) is None  # a's node 1 is not b's
    assert [tuple(t) for t in addresses.bootstrap_order()] == [("10.0.2.1", 9092, "b-1")]
    addresses.learn(1, "b-1", 9092, True)
    assert addresses.node_dial_target(1) == ("10.0.2.1", 9092, "b-1")
    assert addresses.kproxy_address(1) == ("127.0.0.1", 9101)  # what clients were told
    # A client naming kproxy's node 1 reaches b's node 1.
    assert addresses.cluster_address("127.0.0.1", 9101) == ("b-1", 9092)
