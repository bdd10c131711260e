"""Which configuration values name broker or controller addresses (DescribeConfigs).

A broker describes its own configuration to any client that asks, and some of it is
host:port text that no Host/Port field rule sees: its listeners, what it advertises,
the controller quorum, ZooKeeper. kproxy redacts those values the way a broker hides a
password (value null, IsSensitive true), so admin tools show the entry without the
address. The names, from Apache Kafka's broker, controller and client configuration:
"""

from __future__ import annotations

# Exact names whose values are addresses.
ADDRESS_CONFIGS = frozenset(
    {
        "listeners",
        "advertised.listeners",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "zookeeper.connect",  # ZooKeeper-era brokers (3.x)
        "host.name",  # removed in 3.0, still described by older brokers
        "advertised.host.name",
        "port",
        "advertised.port",
    }
)
# Name endings that carry addresses wherever they appear: per-listener overrides
# (`listener.name.<l>.…`) and embedded clients (`….bootstrap.servers`, for example
# remote log metadata managers and metric reporters).
ADDRESS_CONFIG_SUFFIXES = (".bootstrap.servers", "bootstrap.servers", ".listeners")


def names_an_address(name: str) -> bool:
    return name in ADDRESS_CONFIGS or name.endswith(ADDRESS_CONFIG_SUFFIXES)
