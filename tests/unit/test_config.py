"""Tests for kproxy.config: loading, defaults, kproxy's own rules, error paths, immutability.

Per-field type and bound checks are pydantic's (strict types, annotations); a few
cases pin that the annotations are there and how their errors read.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from kproxy.config import (
    AdminSettings,
    ClusterSettings,
    ConfigError,
    EventSettings,
    LimitSettings,
    ListenerSettings,
    LogSettings,
    MetricsSettings,
    Secret,
    Settings,
    ShutdownSettings,
    config_json_schema,
    format_host_port,
    load_config,
    parse_config,
    parse_host_port,
)
from kproxy.config_errors import describe_validation_error

REPO = Path(__file__).resolve().parents[2]
CONFIG_FILES = sorted((REPO / "config").glob("*.yaml")) + sorted((REPO / "config").glob("*.yml"))

MINIMAL: dict[str, Any] = {"cluster": {"bootstrap_servers": ["broker-1.kafka:9092"]}}


def cfg(**sections: Any) -> dict[str, Any]:
    """MINIMAL with the given sections merged in (cluster keys are merged, not replaced)."""
    data = copy.deepcopy(MINIMAL)
    for name, value in sections.items():
        if name == "cluster" and isinstance(value, dict):
            data["cluster"].update(value)
        else:
            data[name] = value
    return data


def error_of(data: Any) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return str(info.value)


def load_error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


# --------------------------------------------------------------------------------------
# shipped config files
# --------------------------------------------------------------------------------------


def test_config_dir_has_examples() -> None:
    names = {p.name for p in CONFIG_FILES}
    assert {"sidecar.yaml", "gateway.yaml"} <= names


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: p.name)
def test_every_shipped_config_loads(path: Path) -> None:
    settings = load_config(path)
    assert isinstance(settings, Settings)
    assert settings.cluster.bootstrap_servers


def test_sidecar_example() -> None:
    s = load_config(REPO / "config" / "sidecar.yaml")
    assert s.listeners.bind_host == "127.0.0.1"
    assert s.listeners.advertised_host == "127.0.0.1"
    assert s.listeners.bootstrap_port == 9092
    assert s.listeners.port_for_node(0) == 9100
    assert s.listeners.port_for_node(2) == 9102
    assert s.cluster.bootstrap_servers[0] == ("kafka-0.kafka-headless.kafka.svc", 9092)


def test_gateway_example() -> None:
    s = load_config(REPO / "config" / "gateway.yaml")
    assert s.listeners.bind_host == "0.0.0.0"
    assert s.listeners.advertised_host == "kafka.example.com"
    assert s.listeners.port_for_node(1001) == 9201
    assert s.listeners.port_for_node(1) == 9101
    assert s.listeners.port_for_node(500) is None
    assert s.cluster.dial_address("broker-1.kafka.internal", 9092) == ("10.0.1.11", 9092)


# --------------------------------------------------------------------------------------
# defaults
# --------------------------------------------------------------------------------------


def test_defaults() -> None:
    s = parse_config(MINIMAL)
    assert s.cluster == ClusterSettings(
        bootstrap_servers=(("broker-1.kafka", 9092),),
        dial_overrides={},
        connect_timeout_seconds=10.0,
    )
    assert s.listeners == ListenerSettings(
        bind_host="127.0.0.1",
        advertised_host="127.0.0.1",
        bootstrap_port=9092,
        broker_port_base=9100,
        node_port_overrides={},
        max_node_id=1000,
    )
    assert s.limits == LimitSettings(
        max_frame_bytes=104857600, write_buffer_high_bytes=4194304, max_in_flight_requests=1000
    )
    assert s.admin == AdminSettings(enabled=True, bind_host="127.0.0.1", port=9644)
    assert s.metrics == MetricsSettings(topic_labels=False)
    assert s.events == EventSettings(
        enabled=True,
        dir=Path("./kproxy-events"),
        max_file_bytes=67108864,
        rotate_seconds=3600.0,
        queue_size=10000,
        request_sample_rate=0.01,
    )
    assert s.shutdown == ShutdownSettings(grace_seconds=10.0)
    assert s.log == LogSettings(level="INFO")
    # The dataclass defaults agree with the YAML defaults.
    assert s == Settings(cluster=s.cluster)


def test_null_sections_mean_defaults() -> None:
    data = cfg(listeners=None, limits=None, admin=None, metrics=None)
    data.update(events=None, shutdown=None, log=None)
    assert parse_config(data) == parse_config(MINIMAL)


def test_advertised_host_defaults_to_bind_host() -> None:
    s = parse_config(cfg(listeners={"bind_host": "10.1.2.3"}))
    assert s.listeners.advertised_host == "10.1.2.3"
    s = parse_config(cfg(listeners={"bind_host": "10.1.2.3", "advertised_host": None}))
    assert s.listeners.advertised_host == "10.1.2.3"


def test_accepted_values() -> None:
    s = parse_config(
        cfg(
            cluster={
                "bootstrap_servers": ["[::1]:9092", "10.0.0.1:19092", "kafka_1:1"],
                "dial_overrides": {"broker-1.kafka:9092": "[fd00::5]:9092"},
                "connect_timeout_seconds": 2,
            },
            listeners={
                "bind_host": "::",
                "advertised_host": "kafka.example.com",
                "bootstrap_port": 0,
                "node_port_overrides": {5000: 20000, 7: 9107},
                "max_node_id": 0,
            },
            limits={"max_frame_bytes": 1024, "write_buffer_high_bytes": 1},
            admin={"enabled": False, "port": 0, "bind_host": "::1"},
            events={"request_sample_rate": 1, "rotate_seconds": 0.5, "dir": "/tmp/ev"},
            shutdown={"grace_seconds": 0},
            log={"level": "debug"},
        )
    )
    assert s.cluster.bootstrap_servers == (("::1", 9092), ("10.0.0.1", 19092), ("kafka_1", 1))
    assert s.cluster.dial_address("broker-1.kafka", 9092) == ("fd00::5", 9092)
    assert s.cluster.connect_timeout_seconds == 2.0
    assert isinstance(s.cluster.connect_timeout_seconds, float)
    assert s.listeners.bootstrap_port == 0
    assert s.listeners.node_port_overrides == {5000: 20000, 7: 9107}
    assert s.limits.max_frame_bytes == 1024
    assert s.admin.enabled is False
    assert s.events.request_sample_rate == 1.0
    assert s.events.dir == Path("/tmp/ev")
    assert s.shutdown.grace_seconds == 0.0
    assert s.log.level == "DEBUG"


def test_dial_address() -> None:
    s = parse_config(cfg(cluster={"dial_overrides": {"Broker-1.Kafka:9092": "10.0.0.5:9092"}}))
    assert s.cluster.dial_address("broker-1.kafka", 9092) == ("10.0.0.5", 9092)
    assert s.cluster.dial_address("BROKER-1.KAFKA", 9092) == ("10.0.0.5", 9092)
    assert s.cluster.dial_address("broker-1.kafka", 9093) == ("broker-1.kafka", 9093)
    assert s.cluster.dial_address("broker-2.kafka", 9092) == ("broker-2.kafka", 9092)


# --------------------------------------------------------------------------------------
# host:port
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("broker-1.kafka:9092", ("broker-1.kafka", 9092)),
        ("localhost:1", ("localhost", 1)),
        ("10.0.0.5:65535", ("10.0.0.5", 65535)),
        ("[::1]:9092", ("::1", 9092)),
        ("[fe80::1%eth0]:9092", ("fe80::1%eth0", 9092)),
        ("kafka-0.kafka-headless.kafka.svc:9092", ("kafka-0.kafka-headless.kafka.svc", 9092)),
    ],
)
def test_parse_host_port_ok(text: str, expected: tuple[str, int]) -> None:
    assert parse_host_port(text) == expected
    assert format_host_port(*expected) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "kafka",
        "kafka:",
        ":9092",
        "kafka:0",
        "kafka:65536",
        "kafka:099999",
        "kafka:-1",
        "kafka:+1",
        "kafka:abc",
        "kafka: 9092",
        "ka fka:9092",
        "-kafka:9092",
        "kafka.:9092",
        "::1:9092",
        "[::1]9092",
        "[::1]",
        "[::1:9092",
        "[kafka]:9092",
        "[zz::1]:9092",
        "kafka:9092:1",
        "kafka:٩٠٩٢",
    ],
)
def test_parse_host_port_rejects(text: str) -> None:
    with pytest.raises(ValueError, match=r"^must be host:port$"):
        parse_host_port(text)


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
        cfg(listeners={"broker_port_base": 65000}),
        "listeners.max_node_id: must be <= 535 so that broker_port_base + max_node_id <= 65535",
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
    "": "cluster, listeners, limits, admin, metrics, events, shutdown, log, runtime, quorum",
    "cluster": "bootstrap_servers, dial_overrides, connect_timeout_seconds, tls, sasl",
    "listeners": "bind_host, advertised_host, bootstrap_port, broker_port_base,"
    " node_port_overrides, max_node_id, role, tls, sni, name, api_policy",
    "limits": (
        "max_frame_bytes, write_buffer_high_bytes, max_in_flight_requests, allocator_retain_bytes,"
        " max_connections, max_connections_per_client_ip, stream_responses_after_bytes,"
        " idle_timeout_seconds, first_request_timeout_seconds"
    ),
    "admin": "enabled, bind_host, port, topology, request_timeout_seconds",
    "metrics": "topic_labels",
    "events": "enabled, sink, dir, max_file_bytes, rotate_seconds, queue_size, "
    "request_sample_rate, kafka",
    "shutdown": "grace_seconds",
    "log": "level",
    "runtime": "event_loop",
}


def test_unknown_top_level_key() -> None:
    data = cfg()
    data["clusters"] = {}
    assert error_of(data) == f"clusters: unknown key (allowed: {ALLOWED['']})"


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
    assert error_of(data) == f'admin."bind-host": unknown key (allowed: {ALLOWED["admin"]})'


def test_unknown_key_reported_before_value_errors() -> None:
    data = cfg(admin={"port": -5, "prot": 1})
    assert error_of(data) == f"admin.prot: unknown key (allowed: {ALLOWED['admin']})"


# --------------------------------------------------------------------------------------
# load_config: file-level problems
# --------------------------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "kproxy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_load_config_ok(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "cluster:\n"
        "  bootstrap_servers: ['broker-1.kafka:9092']\n"
        "  dial_overrides: {'broker-1.kafka:9092': '10.0.0.5:9092'}\n"
        "listeners:\n"
        "  node_port_overrides: {2000: 20000}\n",
    )
    s = load_config(path)
    assert s.cluster.dial_address("broker-1.kafka", 9092) == ("10.0.0.5", 9092)
    assert s.listeners.port_for_node(2000) == 20000
    assert load_config(str(path)) == s


def test_load_config_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    assert load_error(path) == f"<file>: cannot read {path}: No such file or directory"


def test_load_config_directory(tmp_path: Path) -> None:
    assert load_error(tmp_path).startswith(f"<file>: cannot read {tmp_path}: ")


def test_load_config_invalid_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "cluster:\n  bootstrap_servers: [a:1\n")
    assert load_error(path) == (
        f"<file>: invalid YAML in {path}: expected ',' or ']', but got '<stream end>'"
        " (line 3, column 1)"
    )


def test_load_config_tab_indentation(tmp_path: Path) -> None:
    path = write(tmp_path, "cluster:\n\tbootstrap_servers: [a:1]\n")
    message = load_error(path)
    assert message.startswith(f"<file>: invalid YAML in {path}: ")
    assert "(line 2, column 1)" in message
    assert "\n" not in message


def test_load_config_duplicate_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "cluster:\n  bootstrap_servers: [a:1]\nadmin:\n  port: 1\n  port: 2\n",
    )
    assert load_error(path) == (
        f"<file>: invalid YAML in {path}: duplicate key 'port' (line 5, column 3)"
    )


def test_load_config_top_level_list(tmp_path: Path) -> None:
    path = write(tmp_path, "- cluster\n")
    assert load_error(path) == "<file>: top level must be a mapping, got a list"


def test_load_config_top_level_scalar(tmp_path: Path) -> None:
    path = write(tmp_path, "hello\n")
    assert load_error(path) == "<file>: top level must be a mapping, got a string"


def test_load_config_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, "# only a comment\n")
    assert load_error(path) == f"<file>: {path} is empty; top level must be a mapping"


def test_load_config_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"cluster: {bootstrap_servers: ['caf\xe9:1']}\n")
    assert load_error(path) == f"<file>: {path} is not valid UTF-8"


def test_load_config_empty_bootstrap(tmp_path: Path) -> None:
    path = write(tmp_path, "cluster:\n  bootstrap_servers:\n")
    assert load_error(path) == "cluster.bootstrap_servers: must be a list (got None)"


def test_yaml_typing_is_strict(tmp_path: Path) -> None:
    # A quoted number is a string, not a port.
    path = write(tmp_path, "cluster: {bootstrap_servers: ['a:1']}\nadmin: {port: '9644'}\n")
    assert load_error(path) == "admin.port: must be an integer (got '9644')"
    # YAML 1.1 "yes" is a boolean, and a boolean is not an integer.
    path = write(tmp_path, "cluster: {bootstrap_servers: ['a:1']}\nadmin: {port: yes}\n")
    assert load_error(path) == "admin.port: must be an integer (got True)"
    # ... but it is a boolean where one is expected.
    path = write(tmp_path, "cluster: {bootstrap_servers: ['a:1']}\nadmin: {enabled: no}\n")
    assert load_config(path).admin.enabled is False
    # IPv6 needs brackets (and quotes, since "[" starts a YAML flow sequence).
    path = write(tmp_path, "cluster: {bootstrap_servers: ['[::1]:9092']}\n")
    assert load_config(path).cluster.bootstrap_servers == (("::1", 9092),)


# --------------------------------------------------------------------------------------
# immutability
# --------------------------------------------------------------------------------------


def test_settings_are_frozen() -> None:
    s = parse_config(
        cfg(
            cluster={"dial_overrides": {"a:1": "b:2"}},
            listeners={"node_port_overrides": {2000: 20000}},
        )
    )
    sections: list[Any] = [
        s,
        s.cluster,
        s.listeners,
        s.limits,
        s.admin,
        s.metrics,
        s.events,
        s.shutdown,
        s.log,
        s.runtime,
    ]
    for obj in sections:
        field_name = next(iter(type(obj).model_fields))
        with pytest.raises(ValidationError, match="frozen"):
            setattr(obj, field_name, None)
    assert isinstance(s.cluster.bootstrap_servers, tuple)


def test_model_copy_derives_new_settings() -> None:
    s = parse_config(MINIMAL)
    t = s.model_copy(update={"log": LogSettings(level="DEBUG")})
    assert t.log.level == "DEBUG"
    assert s.log.level == "INFO"
    assert t.cluster is s.cluster


def test_runtime_event_loop() -> None:
    assert parse_config(MINIMAL).runtime.event_loop == "auto"
    for loop in ("uvloop", "asyncio"):
        assert parse_config(cfg(runtime={"event_loop": loop})).runtime.event_loop == loop


# --------------------------------------------------------------------------------------
# secrets: inline, from the environment, from a file
# --------------------------------------------------------------------------------------


class _Credentials(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    password: Secret


_Credentials.model_rebuild(_types_namespace={"Secret": Secret})


def test_secret_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KPROXY_TEST_SECRET", "from-env")
    secret_file = tmp_path / "password"
    secret_file.write_text("from-file\n")
    inline = _Credentials.model_validate({"password": "inline"})
    assert inline.password.get_secret_value() == "inline"
    env = _Credentials.model_validate({"password": {"env": "KPROXY_TEST_SECRET"}})
    assert env.password.get_secret_value() == "from-env"
    got = _Credentials.model_validate({"password": {"file": str(secret_file)}})
    assert got.password.get_secret_value() == "from-file"  # one trailing newline dropped
    assert "from-file" not in repr(got)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"env": "KPROXY_TEST_UNSET"},
            "password: environment variable KPROXY_TEST_UNSET is not set",
        ),
        (
            {"file": "/nonexistent/kproxy-secret"},
            "password: cannot read /nonexistent/kproxy-secret",
        ),
        ({"vault": "x"}, "password: must be a string, {env: NAME} or {file: PATH}"),
    ],
)
def test_secret_errors_name_the_source_not_the_value(
    value: dict[str, str], expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KPROXY_TEST_UNSET", raising=False)
    with pytest.raises(ValidationError) as info:
        _Credentials.model_validate({"password": value})
    assert str(describe_validation_error(info.value, _Credentials)).startswith(expected)


# --------------------------------------------------------------------------------------
# JSON Schema
# --------------------------------------------------------------------------------------


def test_committed_json_schema_matches_the_code() -> None:
    committed = json.loads((REPO / "docs" / "config.schema.json").read_text())
    assert committed == config_json_schema(), (
        "docs/config.schema.json is stale: kproxy config-schema > docs/config.schema.json"
    )


def test_json_schema_rejects_unknown_keys_and_describes_bounds() -> None:
    schema = config_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["cluster"]
    listeners = schema["$defs"]["ListenerSettings"]
    assert listeners["additionalProperties"] is False
    assert listeners["properties"]["bootstrap_port"]["maximum"] == 65535


# --------------------------------------------------------------------------------------
# port_for_node
# --------------------------------------------------------------------------------------


def test_port_for_node() -> None:
    listeners = ListenerSettings(
        broker_port_base=9100, max_node_id=10, node_port_overrides={3: 9500, 5000: 9600}
    )
    assert listeners.port_for_node(0) == 9100
    assert listeners.port_for_node(1) == 9101
    assert listeners.port_for_node(3) == 9500  # override wins over base + id
    assert listeners.port_for_node(10) == 9110  # max_node_id is inclusive
    assert listeners.port_for_node(11) is None
    assert listeners.port_for_node(5000) == 9600  # override beyond max_node_id
    assert listeners.port_for_node(-1) is None


def test_port_for_node_os_chosen() -> None:
    # broker_port_base 0 (demo and tests): every mappable node gets an OS-chosen port.
    s = parse_config(
        cfg(
            listeners={
                "bootstrap_port": 0,
                "broker_port_base": 0,
                "max_node_id": 10,
                "node_port_overrides": {20: 20000},
            },
            admin={"port": 0},
        )
    )
    assert s.listeners.port_for_node(0) == 0
    assert s.listeners.port_for_node(10) == 0
    assert s.listeners.port_for_node(11) is None
    assert s.listeners.port_for_node(20) == 20000


def test_os_chosen_node_ports_never_collide() -> None:
    s = parse_config(
        cfg(listeners={"broker_port_base": 0, "bootstrap_port": 5, "node_port_overrides": {0: 7}})
    )
    assert s.listeners.port_for_node(0) == 7
    assert s.listeners.port_for_node(7) == 0


def test_port_for_node_defaults() -> None:
    listeners = parse_config(MINIMAL).listeners
    assert listeners.port_for_node(0) == 9100
    assert listeners.port_for_node(1000) == 10100
    assert listeners.port_for_node(1001) is None


def test_host_only_dial_overrides_keep_the_port() -> None:
    settings = parse_config(
        cfg(
            cluster={
                "dial_overrides": {
                    "broker-1.kafka.invalid": "127.0.0.1",
                    "broker-2.kafka.invalid:9092": "10.0.0.2:19092",
                }
            }
        )
    )
    c = settings.cluster
    assert c.dial_address("BROKER-1.kafka.invalid", 40123) == ("127.0.0.1", 40123)
    assert c.dial_address("broker-2.kafka.invalid", 9092) == ("10.0.0.2", 19092)
    assert c.dial_address("broker-2.kafka.invalid", 9093) == ("broker-2.kafka.invalid", 9093)


# --------------------------------------------------------------------------- api_policy


def policy(**lists: Any) -> dict[str, Any]:
    return cfg(listeners={"name": "gateway", "api_policy": lists})


def test_node_ids_as_json_keys_are_taken() -> None:
    """JSON object keys are strings, so a configuration written from JSON or rendered by
    Helm names node 1001 as "1001"; only whole decimal numbers are taken."""
    s = parse_config(cfg(listeners={"max_node_id": 10, "node_port_overrides": {"1001": 9201}}))
    assert s.listeners.node_port_overrides == {1001: 9201}
    for key in ("-1", "1.5", " 1", "\u0661"):
        bad = cfg(listeners={"max_node_id": 10, "node_port_overrides": {key: 9201}})
        assert "must be an integer" in error_of(bad), key


def test_api_policy_deny_list_names_apis() -> None:
    settings = parse_config(policy(deny=["CreateTopics", "DeleteRecords"]))
    assert settings.listeners.denied_apis() == {19, 21}
    assert settings.listeners.name == "gateway"
    assert not settings.listeners.advertises_denied()
    assert parse_config(MINIMAL).listeners.denied_apis() == frozenset()
    advertising = policy(deny=["CreateTopics"], advertise_denied=True)
    assert parse_config(advertising).listeners.advertises_denied()


def test_api_policy_allow_list_refuses_everything_else_but_what_clients_need_first() -> None:
    denied = parse_config(policy(allow=["Produce", "Fetch", "Metadata"])).listeners.denied_apis()
    assert not {0, 1, 3, 18, 17, 36} & denied  # ApiVersions and SASL stay
    assert {19, 20, 21, 32, 33} <= denied


@pytest.mark.parametrize(
    ("lists", "message"),
    [
        (
            {"deny": ["CreateTopic"]},
            "listeners.api_policy.deny[0]: not a Kafka API name (did you mean 'CreateTopics'?) "
            "(got 'CreateTopic')",
        ),
        ({"deny": ["ApiVersions"]}, "listeners.api_policy.deny: ApiVersions cannot be denied"),
        ({"deny": [], "allow": []}, "listeners.api_policy.deny: give allow or deny"),
        ({}, "listeners.api_policy.deny: give allow or deny"),
        ({"deny": "CreateTopics"}, "listeners.api_policy.deny: must be a list"),
        (
            {"deny": ["CreateTopics"], "advertise_denied": "yes"},
            "listeners.api_policy.advertise_denied: must be true or false (got 'yes')",
        ),
    ],
)
def test_api_policy_errors_name_the_bad_value(lists: dict[str, Any], message: str) -> None:
    assert error_of(policy(**lists)).startswith(message)


# --------------------------------------------------------------------------------------
# quorum (KIP-853 controllers through kproxy)
# --------------------------------------------------------------------------------------


def quorum_cfg(**controllers: dict[str, Any]) -> dict[str, Any]:
    return cfg(quorum={"controllers": controllers})


def test_quorum_controllers_parse_with_decimal_string_ids() -> None:
    s = parse_config(quorum_cfg(**{"3000": {"port": 19093, "address": "c-0.invalid:9093"}}))
    assert s.quorum.controllers[3000].port == 19093
    assert s.quorum.controllers[3000].address == ("c-0.invalid", 9093)
    assert s.quorum.ports() == {19093: 3000}
    assert parse_config(cfg()).quorum.controllers == {}


@pytest.mark.parametrize(
    ("controllers", "expected"),
    [
        (
            {"1": {"port": 9092, "address": "c.invalid:9093"}},
            "quorum.controllers.1.port: port 9092 collides with listeners.bootstrap_port",
        ),
        (
            {"1": {"port": 9644, "address": "c.invalid:9093"}},
            "quorum.controllers.1.port: port 9644 collides with admin.port",
        ),
        (
            {"1": {"port": 9105, "address": "c.invalid:9093"}},
            "quorum.controllers.1.port: port 9105 collides with the port of node 5 "
            "(broker_port_base + 5)",
        ),
        (
            {
                "1": {"port": 19001, "address": "c.invalid:9093"},
                "2": {"port": 19001, "address": "d.invalid:9093"},
            },
            "quorum.controllers.2.port: port 19001 is also controller 1's",
        ),
        (
            {"1": {"port": 19001, "address": "c.invalid"}},
            "quorum.controllers.\"1\".address: must be host:port (got 'c.invalid')",
        ),
        (
            {"1": {"port": 0, "address": "c.invalid:9093"}},
            'quorum.controllers."1".port: must be >= 1 (got 0)',
        ),
    ],
)
def test_quorum_ports_and_addresses_are_checked(controllers: dict[str, Any], expected: str) -> None:
    assert error_of(quorum_cfg(**controllers)) == expected


def test_a_controller_port_may_not_be_a_node_override() -> None:
    data = quorum_cfg(**{"1": {"port": 19001, "address": "c.invalid:9093"}})
    data["listeners"] = {"node_port_overrides": {"2000": 19001}}
    assert error_of(data) == ("quorum.controllers.1.port: port 19001 is also used by node 2000")


def test_the_quorum_needs_a_restart_to_change() -> None:
    from kproxy.config_reload import plan

    old = parse_config(cfg())
    new = parse_config(quorum_cfg(**{"1": {"port": 19001, "address": "c.invalid:9093"}}))
    assert plan(old, new).restart == ["quorum.controllers"]
