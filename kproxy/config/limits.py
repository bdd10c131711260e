"""The `limits` settings: what bounds one connection and the whole proxy (frame size,
requests in flight, connections, timeouts, connection lifetime)."""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import Field, Strict

from kproxy.config.section import Section
from kproxy.config.types import PositiveSeconds

__all__ = ["LimitSettings"]

MIN_FRAME_BYTES: Final = 1024
MAX_FRAME_BYTES: Final = 2**31 - 1


class LimitSettings(Section):
    max_frame_bytes: Annotated[int, Strict(), Field(ge=MIN_FRAME_BYTES, le=MAX_FRAME_BYTES)] = (
        104857600
    )
    write_buffer_high_bytes: Annotated[int, Strict(), Field(ge=1)] = Field(
        4194304,
        description="unsent bytes held for one side before the other is no longer read "
        "(64 KiB at most on the standard asyncio loop before Python 3.12)",
    )
    max_in_flight_requests: Annotated[int, Strict(), Field(ge=1)] = Field(
        1000, description="per client connection"
    )
    allocator_retain_bytes: Annotated[int, Strict(), Field(ge=0, le=1 << 30)] = Field(
        33554432, description="freed memory glibc keeps for the next frame (0: its defaults)"
    )
    max_connections: Annotated[int, Strict(), Field(ge=1)] | None = Field(
        None,
        description="client connections at once, whole proxy (default: what the open-file "
        "limit allows, two descriptors a connection)",
    )
    max_connections_per_client_ip: Annotated[int, Strict(), Field(ge=1)] | None = Field(
        None, description="client connections at once from one IP address (default: no cap)"
    )
    stream_responses_after_bytes: Annotated[int, Strict(), Field(ge=0)] = Field(
        65536,
        description="responses at least this large are forwarded as they arrive (a Fetch "
        "response's records pass through while its end is checked; 0: every response is "
        "gathered whole first)",
    )
    idle_timeout_seconds: PositiveSeconds = Field(
        600.0, description="no bytes either way for this long closes the pair"
    )
    first_request_timeout_seconds: PositiveSeconds = Field(
        10.0,
        description="a client that has not sent a whole first request by then is closed "
        "(the broker is dialled only once it has)",
    )
    max_connection_age_seconds: PositiveSeconds | None = Field(
        None,
        description="a client connection this old (give or take connection_age_jitter) is "
        "closed between two responses, so that its client reconnects through the load "
        "balancer, to any replica (default: no limit)",
    )
    connection_age_jitter: Annotated[float, Strict(), Field(ge=0, lt=1)] = Field(
        0.1,
        description="the share each connection's age limit varies by, at random, so that "
        "connections opened together do not all close together",
    )
    max_connection_creation_rate: Annotated[float, Strict(), Field(gt=0)] | None = Field(
        None,
        description="new connections a second from one client IP address, as Kafka's "
        "max.connection.creation.rate; more are refused at once (default: no limit)",
    )
