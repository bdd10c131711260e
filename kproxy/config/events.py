"""The `events` section: where kproxy's events go (files, a Kafka topic, or both)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BeforeValidator, Field, Strict, model_validator
from pydantic_core import PydanticCustomError

from kproxy.config.section import Section
from kproxy.config.types import (
    Bool,
    BrokerAddress,
    PositiveSeconds,
    Secret,
    fail,
    non_empty_path,
)
from kproxy.protocol.hostport import parse_host_port

__all__ = ["EVENT_SINKS", "PROXY_BOOTSTRAP", "EventSettings", "KafkaSinkSettings"]

EVENT_SINKS: Final = ("file", "kafka")
# events.kafka.bootstrap_servers: publish through this kproxy's own bootstrap listener.
PROXY_BOOTSTRAP: Final = "proxy"
# librdkafka settings kproxy sets itself: one client id it recognises (and keeps out
# of its redirect metrics), and the cluster the section names.
OWNED_PROPERTIES: Final = frozenset(("bootstrap.servers", "client.id"))


def _one_or_many(value: Any) -> Any:
    return (value,) if isinstance(value, str) else value


def _proxy_or_servers(value: Any) -> Any:
    """`proxy`, a list of host:port, or librdkafka's own comma-separated string."""
    if value == PROXY_BOOTSTRAP:
        return value
    items = [p.strip() for p in value.split(",")] if isinstance(value, str) else value
    if isinstance(items, list | tuple) and items:
        try:
            return tuple(p if isinstance(p, tuple) else parse_host_port(p) for p in items)
        except (TypeError, ValueError):
            pass
    raise PydanticCustomError("bootstrap", "must be proxy or a list of host:port")


class KafkaSinkSettings(Section):
    """Publish events to a Kafka topic (confluent-kafka: batching, compression,
    idempotence); needs the `kafka` extra."""

    bootstrap_servers: Annotated[
        Literal["proxy"] | Annotated[tuple[BrokerAddress, ...], Field(min_length=1)],
        BeforeValidator(_proxy_or_servers),
    ] = Field(
        PROXY_BOOTSTRAP,
        description="proxy: the proxied cluster, through this kproxy's own bootstrap "
        "listener (its dial overrides, its addresses); or host:port of any cluster",
    )
    topic: Annotated[str, Strict(), Field(min_length=1, max_length=249)] = "kproxy-events"
    create_topic: Bool = Field(True, description="create the topic at start when it is missing")
    partitions: Annotated[int, Strict(), Field(ge=1)] = 6
    replication_factor: Annotated[int, Strict(), Field(ge=-1)] = Field(
        -1, description="-1: the cluster's default.replication.factor"
    )
    message_timeout_seconds: PositiveSeconds = Field(
        300.0, description="an event not delivered by then is dropped and counted"
    )
    properties: dict[str, Secret] = Field(
        default_factory=dict,
        description="further librdkafka settings (security.protocol, sasl.*, ssl.*, "
        "compression.type, ...)",
    )

    @model_validator(mode="after")
    def _owned_properties(self) -> KafkaSinkSettings:
        for key in self.properties:
            if key in OWNED_PROPERTIES:
                raise fail(f"properties.{key}", "is set by kproxy (use bootstrap_servers)")
        return self


class EventSettings(Section):
    enabled: Bool = True
    sink: Annotated[
        tuple[Literal["file", "kafka"], ...],
        BeforeValidator(_one_or_many),
        Field(min_length=1, description="file, kafka, or both as a list"),
    ] = ("file",)
    dir: Annotated[Path, BeforeValidator(non_empty_path)] = Path("kproxy-events")
    max_file_bytes: Annotated[int, Strict(), Field(ge=1)] = 67108864
    rotate_seconds: PositiveSeconds = 3600.0
    queue_size: Annotated[int, Strict(), Field(ge=1)] = 10000
    request_sample_rate: Annotated[float, Strict(), Field(ge=0, le=1)] = 0.01
    kafka: KafkaSinkSettings = Field(default_factory=KafkaSinkSettings)

    @model_validator(mode="after")
    def _sinks_once(self) -> EventSettings:
        if len(set(self.sink)) != len(self.sink):
            raise fail("sink", f"names a sink twice (got {list(self.sink)})")
        return self
