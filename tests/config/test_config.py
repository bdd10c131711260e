"""Tests for kproxy.config: the shipped examples, defaults, host:port parsing, and
settings that cannot change once made. Validation errors, configuration files and
secrets, and node ports, API policy and the quorum have modules of their own
(`test_config_*.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kproxy.config.settings import (
    AdminSettings,
    ClusterSettings,
    EventSettings,
    LimitSettings,
    ListenerSettings,
    LogSettings,
    MetricsSettings,
    Settings,
    ShutdownSettings,
    format_host_port,
    load_config,
    parse_config,
    parse_host_port,
)
from tests.config_builders import CONFIG_FILES, MINIMAL, REPO, cfg

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
        max_node_id=500,
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
