"""kproxy.config's own rules and how a bad value is reported: each invalid
configuration and the one-line error it gets, and unknown keys named before any value
error. Per-field type and bound checks are pydantic's (strict types, annotations); a
few cases pin that the annotations are there and how their errors read."""

from __future__ import annotations

from typing import Any

import pytest

from kproxy.config.settings import (
    ConfigError,
    parse_config,
)
from tests.config_builders import cfg, error_of

# --------------------------------------------------------------------------------------
# validation rules: exact "path: message"
# --------------------------------------------------------------------------------------

PORT_RANGE = "must be 1-65535"
PORT0_RANGE = "must be 0-65535"

CASES: list[Any] = [
    pytest.param([], "<file>: top level must be a mapping", id="top-list"),
    pytest.param(None, "<file>: top level must be a mapping", id="top-none"),
    pytest.param({}, "cluster.bootstrap_servers: required", id="no-cluster"),
    pytest.param({"cluster": None}, "cluster.bootstrap_servers: required", id="null-cluster"),
    pytest.param({"cluster": []}, "cluster: must be a mapping (got [])", id="cluster-not-mapping"),
    pytest.param(cfg(admin=5), "admin: must be a mapping (got 5)", id="admin-not-mapping"),
    pytest.param({"cluster": {}}, "cluster.bootstrap_servers: required", id="bootstrap-missing"),
    pytest.param(
        cfg(cluster={"bootstrap_servers": []}),
        "cluster.bootstrap_servers: must not be empty (got [])",
        id="bootstrap-empty",
    ),
    pytest.param(
        cfg(cluster={"bootstrap_servers": "broker-1.kafka:9092"}),
        "cluster.bootstrap_servers: must be a list (got 'broker-1.kafka:9092')",
        id="bootstrap-string",
    ),
    pytest.param(
        cfg(cluster={"bootstrap_servers": ["a:1", "broker"]}),
        "cluster.bootstrap_servers[1]: must be host:port (got 'broker')",
        id="bootstrap-item-no-port",
    ),
    pytest.param(
        cfg(cluster={"bootstrap_servers": ["a:70000"]}),
        "cluster.bootstrap_servers[0]: must be host:port (got 'a:70000')",
        id="bootstrap-item-bad-port",
    ),
    pytest.param(
        cfg(cluster={"bootstrap_servers": ["::1:9092"]}),
        "cluster.bootstrap_servers[0]: must be host:port (got '::1:9092')",
        id="bootstrap-item-ipv6-unbracketed",
    ),
    pytest.param(
        cfg(cluster={"dial_overrides": ["a:1"]}),
        "cluster.dial_overrides: must be a mapping (got ['a:1'])",
        id="dial-overrides-not-mapping",
    ),
    pytest.param(
        cfg(cluster={"dial_overrides": {"broker-1.kafka:9092": "10.0.0.5"}}),
        'cluster.dial_overrides."broker-1.kafka:9092": must be host:port',
        id="dial-override-bad-value",
    ),
    pytest.param(
        cfg(cluster={"dial_overrides": {"broker": "10.0.0.5:9092"}}),
        "cluster.dial_overrides.broker: must be a host (the key has no port)",
        id="dial-override-host-key-port-value",
    ),
    pytest.param(
        cfg(cluster={"dial_overrides": {"bad host!": "10.0.0.5"}}),
        'cluster.dial_overrides."bad host!": key must be host:port or host',
        id="dial-override-bad-key",
    ),
    pytest.param(
        cfg(cluster={"dial_overrides": {"b.kafka:1": "x:1", "B.Kafka:1": "y:1"}}),
        "cluster.dial_overrides.\"B.Kafka:1\": same broker address as 'b.kafka:1'",
        id="dial-override-duplicate",
    ),
    pytest.param(
        cfg(cluster={"connect_timeout_seconds": 0}),
        "cluster.connect_timeout_seconds: must be > 0 (got 0)",
        id="connect-timeout-zero",
    ),
    pytest.param(
        cfg(cluster={"connect_timeout_seconds": True}),
        "cluster.connect_timeout_seconds: must be a number (got True)",
        id="connect-timeout-bool",
    ),
    pytest.param(
        cfg(cluster={"connect_timeout_seconds": float("inf")}),
        "cluster.connect_timeout_seconds: must be a finite number (got inf)",
        id="connect-timeout-inf",
    ),
    pytest.param(
        cfg(listeners={"bind_host": ""}),
        "listeners.bind_host: must not be empty (got '')",
        id="bind-host-empty",
    ),
    pytest.param(
        cfg(listeners={"bind_host": "local host"}),
        "listeners.bind_host: must be a hostname or IP address (got 'local host')",
        id="bind-host-invalid",
    ),
    pytest.param(
        cfg(listeners={"bind_host": "[::1]"}),
        "listeners.bind_host: must be a hostname or IP address (got '[::1]')",
        id="bind-host-bracketed",
    ),
    pytest.param(
        cfg(listeners={"advertised_host": "0.0.0.0"}),
        "listeners.advertised_host: must not be a wildcard address (0.0.0.0 or ::)",
        id="advertised-host-wildcard4",
    ),
    pytest.param(
        cfg(listeners={"advertised_host": "::"}),
        "listeners.advertised_host: must not be a wildcard address (0.0.0.0 or ::)",
        id="advertised-host-wildcard6",
    ),
    pytest.param(
        cfg(listeners={"bind_host": "0.0.0.0"}),
        "listeners.advertised_host: required when listeners.bind_host is a wildcard address",
        id="advertised-host-missing-with-wildcard-bind",
    ),
    pytest.param(
        cfg(listeners={"bind_host": "::", "advertised_host": None}),
        "listeners.advertised_host: required when listeners.bind_host is a wildcard address",
        id="advertised-host-null-with-wildcard-bind",
    ),
    pytest.param(
        cfg(listeners={"advertised_host": "kafka.example.com:9092"}),
        "listeners.advertised_host: must be a hostname or IP address"
        " (got 'kafka.example.com:9092')",
        id="advertised-host-with-port",
    ),
    pytest.param(
        cfg(listeners={"bootstrap_port": 65536}),
        "listeners.bootstrap_port: must be 0-65535 (got 65536)",
        id="bootstrap-port-high",
    ),
    pytest.param(
        cfg(listeners={"bootstrap_port": -1}),
        "listeners.bootstrap_port: must be 0-65535 (got -1)",
        id="bootstrap-port-negative",
    ),
    pytest.param(
        cfg(listeners={"bootstrap_port": True}),
        "listeners.bootstrap_port: must be an integer (got True)",
        id="bootstrap-port-bool",
    ),
    pytest.param(
        cfg(listeners={"bootstrap_port": "9092"}),
        "listeners.bootstrap_port: must be an integer (got '9092')",
        id="bootstrap-port-string",
    ),
    pytest.param(
        cfg(listeners={"bootstrap_port": 9092.0}),
        "listeners.bootstrap_port: must be an integer (got 9092.0)",
        id="bootstrap-port-float",
    ),
    pytest.param(
        cfg(listeners={"broker_port_base": 65536}),
        "listeners.broker_port_base: must be 0-65535 (got 65536)",
        id="broker-port-base-high",
    ),
    pytest.param(
        cfg(listeners={"max_node_id": -1}),
        "listeners.max_node_id: must be >= 0 (got -1)",
        id="max-node-id-negative",
    ),
    pytest.param(
        cfg(limits={"connection_age_jitter": 1.0}),
        "limits.connection_age_jitter: must be < 1 (got 1.0)",
        id="age-jitter-whole",
    ),
    pytest.param(
        cfg(limits={"max_connection_age_seconds": 0}),
        "limits.max_connection_age_seconds: must be > 0 (got 0)",
        id="age-zero",
    ),
    pytest.param(
        cfg(limits={"max_connection_creation_rate": -1.0}),
        "limits.max_connection_creation_rate: must be > 0 (got -1.0)",
        id="creation-rate-negative",
    ),
    pytest.param(
        cfg(listeners={"proxy_protocol": {"trusted_networks": ["10.0.0.0/33"]}}),
        "listeners.proxy_protocol.trusted_networks.0: not an IP network (CIDR, e.g. "
        "10.0.0.0/8) (got '10.0.0.0/33')",
        id="proxy-protocol-bad-network",
    ),
    pytest.param(
        cfg(listeners={"proxy_protocol": {"mode": "on", "trusted_networks": ["10.0.0.0/8"]}}),
        "listeners.proxy_protocol.mode: must be one of 'off', 'optional' or 'required' (got 'on')",
        id="proxy-protocol-bad-mode",
    ),
    pytest.param(
        cfg(listeners={"proxy_protocol": {}}),
        "listeners.proxy_protocol.trusted_networks: required",
        id="proxy-protocol-no-networks",
    ),
    pytest.param(
        cfg(listeners={"broker_port_base": 65100}),
        "listeners.max_node_id: must be <= 435 so that broker_port_base + max_node_id <= 65535",
        id="max-node-id-derived-port-too-high",
    ),
    pytest.param(
        cfg(listeners={"max_node_id": 56436}),
        "listeners.max_node_id: must be <= 56435 so that broker_port_base + max_node_id <= 65535",
        id="max-node-id-too-high",
    ),
    pytest.param(
        cfg(listeners={"node_port_overrides": [9200]}),
        "listeners.node_port_overrides: must be a mapping (got [9200])",
        id="node-overrides-not-mapping",
    ),
    pytest.param(
        cfg(listeners={"node_port_overrides": {-1: 20000}}),
        "listeners.node_port_overrides.-1: must be >= 0 (got -1)",
        id="node-override-negative-id",
    ),
    pytest.param(
        cfg(listeners={"node_port_overrides": {"a": 20000}}),
        "listeners.node_port_overrides.a: must be an integer (got 'a')",
        id="node-override-string-id",
    ),
    pytest.param(
        cfg(listeners={"node_port_overrides": {5: 0}}),
        "listeners.node_port_overrides.5: must be >= 1 (got 0)",
        id="node-override-port-zero",
    ),
    pytest.param(
        cfg(listeners={"node_port_overrides": {2000: 9092}}),
        "listeners.node_port_overrides.2000: port 9092 collides with listeners.bootstrap_port",
        id="override-collides-bootstrap",
    ),
    pytest.param(
        cfg(listeners={"max_node_id": 10, "node_port_overrides": {2000: 9644}}),
        "listeners.node_port_overrides.2000: port 9644 collides with admin.port",
        id="override-collides-admin",
    ),
    pytest.param(
        cfg(listeners={"node_port_overrides": {2000: 20000, 2001: 20000}}),
        "listeners.node_port_overrides.2001: port 20000 is also used by node 2000",
        id="override-duplicate-port",
    ),
    pytest.param(
        cfg(listeners={"node_port_overrides": {2000: 9105}}),
        "listeners.node_port_overrides.2000: port 9105 collides with the port of node 5"
        " (broker_port_base + 5)",
        id="override-collides-derived",
    ),
    pytest.param(
        cfg(listeners={"bootstrap_port": 9100}),
        "listeners.bootstrap_port: collides with the port of node 0 (broker_port_base + 0)",
        id="bootstrap-collides-derived",
    ),
    pytest.param(
        cfg(admin={"port": 9092}),
        "admin.port: collides with listeners.bootstrap_port",
        id="admin-collides-bootstrap",
    ),
    pytest.param(
        cfg(limits={"max_frame_bytes": 1023}),
        "limits.max_frame_bytes: must be 1024-2147483647 (got 1023)",
        id="max-frame-low",
    ),
    pytest.param(
        cfg(limits={"max_in_flight_requests": 0}),
        "limits.max_in_flight_requests: must be >= 1 (got 0)",
        id="in-flight-zero",
    ),
    pytest.param(
        cfg(limits={"stream_responses_after_bytes": -1}),
        "limits.stream_responses_after_bytes: must be >= 0 (got -1)",
        id="stream-after-negative",
    ),
    pytest.param(
        cfg(limits={"stream_responses_after_bytes": "64k"}),
        "limits.stream_responses_after_bytes: must be an integer (got '64k')",
        id="stream-after-string",
    ),
    pytest.param(
        cfg(admin={"enabled": "yes"}),
        "admin.enabled: must be true or false (got 'yes')",
        id="admin-enabled-string",
    ),
    pytest.param(
        cfg(admin={"bind_host": ""}),
        "admin.bind_host: must not be empty (got '')",
        id="admin-bind-host-empty",
    ),
    pytest.param(
        cfg(events={"dir": ""}), "events.dir: must not be empty (got '')", id="events-dir-empty"
    ),
    pytest.param(
        cfg(events={"rotate_seconds": 0}),
        "events.rotate_seconds: must be > 0 (got 0)",
        id="events-rotate-zero",
    ),
    pytest.param(
        cfg(events={"request_sample_rate": 1.5}),
        "events.request_sample_rate: must be 0-1 (got 1.5)",
        id="events-sample-rate-high",
    ),
    pytest.param(
        cfg(shutdown={"grace_seconds": -1}),
        "shutdown.grace_seconds: must be >= 0 (got -1)",
        id="grace-negative",
    ),
    pytest.param(
        cfg(log={"level": "TRACE"}),
        "log.level: must be one of 'DEBUG', 'INFO', 'WARNING' or 'ERROR' (got 'TRACE')",
        id="log-level-unknown",
    ),
    pytest.param(
        cfg(runtime={"event_loop": "tokio"}),
        "runtime.event_loop: must be one of 'auto', 'uvloop' or 'asyncio' (got 'tokio')",
        id="event-loop-unknown",
    ),
]


@pytest.mark.parametrize(("data", "expected"), CASES)
def test_validation_error(data: Any, expected: str) -> None:
    assert error_of(data) == expected


def test_config_error_attributes() -> None:
    err = ConfigError("listeners.broker_port_base", "must be 1-65535")
    assert str(err) == "listeners.broker_port_base: must be 1-65535"
    assert err.path == "listeners.broker_port_base"
    assert err.message == "must be 1-65535"
    assert isinstance(err, ValueError)


# -- collisions that are NOT errors


def test_override_of_own_derived_port_is_fine() -> None:
    s = parse_config(cfg(listeners={"node_port_overrides": {5: 9105}}))
    assert s.listeners.port_for_node(5) == 9105


def test_override_may_take_port_of_moved_node() -> None:
    s = parse_config(cfg(listeners={"node_port_overrides": {5: 20000, 2000: 9105}}))
    assert s.listeners.port_for_node(5) == 20000
    assert s.listeners.port_for_node(2000) == 9105


def test_bootstrap_port_may_take_port_of_moved_node() -> None:
    s = parse_config(cfg(listeners={"bootstrap_port": 9100, "node_port_overrides": {0: 20000}}))
    assert s.listeners.bootstrap_port == 9100


def test_admin_port_collision_ignored_when_disabled_or_os_chosen() -> None:
    parse_config(
        cfg(
            admin={"enabled": False},
            listeners={"max_node_id": 10, "node_port_overrides": {2000: 9644}},
        )
    )
    parse_config(cfg(admin={"enabled": False, "port": 9092}))
    parse_config(cfg(admin={"port": 0}, listeners={"bootstrap_port": 0}))


# --------------------------------------------------------------------------------------
# unknown keys
# --------------------------------------------------------------------------------------

ALLOWED = {
    "": "cluster, listeners, limits, admin, metrics, events, shutdown, log, runtime, quorum,"
    " quotas, principals, clusters, switchover",
    "cluster": "bootstrap_servers, dial_overrides, connect_timeout_seconds, tls, sasl",
    "listeners": "bind_host, advertised_host, bootstrap_port, broker_port_base,"
    " node_port_overrides, max_node_id, role, tls, sni, name, api_policy, authorization,"
    " tenancy, proxy_protocol",
    "limits": (
        "max_frame_bytes, write_buffer_high_bytes, max_in_flight_requests, allocator_retain_bytes,"
        " max_connections, max_connections_per_client_ip, stream_responses_after_bytes,"
        " idle_timeout_seconds, first_request_timeout_seconds, max_connection_age_seconds,"
        " connection_age_jitter, max_connection_creation_rate"
    ),
    "admin": "enabled, bind_host, port, topology, request_timeout_seconds",
    "metrics": "topic_labels, principal_labels",
    "events": "enabled, sink, dir, max_file_bytes, rotate_seconds, queue_size, "
    "request_sample_rate, kafka",
    "shutdown": "grace_seconds",
    "log": "level",
    "runtime": "event_loop, workers",
}


def test_unknown_top_level_key() -> None:
    data = cfg()
    data["clustr"] = {}
    assert error_of(data) == (
        f"clustr: unknown key, did you mean 'cluster'? (allowed: {ALLOWED['']})"
    )


def test_unknown_top_level_non_string_key() -> None:
    data: dict[Any, Any] = cfg()
    data[1] = "x"
    assert error_of(data) == f"1: unknown key (allowed: {ALLOWED['']})"


@pytest.mark.parametrize("section", [s for s in ALLOWED if s])
def test_unknown_key_in_section(section: str) -> None:
    data = cfg()
    data.setdefault(section, {})
    data[section]["bogus"] = 1
    assert error_of(data) == f"{section}.bogus: unknown key (allowed: {ALLOWED[section]})"


def test_unknown_key_is_quoted_when_not_identifier() -> None:
    data = cfg(admin={"bind-host": "x"})
    assert error_of(data) == (
        f"admin.\"bind-host\": unknown key, did you mean 'bind_host'? (allowed: {ALLOWED['admin']})"
    )


def test_unknown_key_reported_before_value_errors() -> None:
    data = cfg(admin={"port": -5, "prot": 1})
    assert error_of(data) == (
        f"admin.prot: unknown key, did you mean 'port'? (allowed: {ALLOWED['admin']})"
    )
