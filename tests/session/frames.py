"""Builders for the session's playbooks: kproxy's address map and session, driven without
sockets, and Metadata, Produce and raw request frames encoded with kio (an independent
codec), so that every rule's test builds its bytes the same way.
"""

from __future__ import annotations

import datetime
import struct

from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.metadata.v12.response import MetadataResponse, MetadataResponseBroker
from kio.schema.produce.v10.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.produce.v10.response import (
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from kio.static.primitive import Records

from kproxy.config.settings import parse_config
from kproxy.runtime.mapping import AddressMap
from kproxy.session import ClientStep, ProxySession, SessionLimits, UpstreamStep
from kproxy.session.admission import CLIENT_REFUSED_APIS
from tests.kio_support import encode_request_frame, encode_response_frame

NOW = 100.0
LATER = 100.25
KPROXY_HOST = "127.0.0.1"
ZERO = datetime.timedelta(0)


def address_map(
    max_node_id: int = 10,
    open_nodes: tuple[int, ...] = (),
    advertised: dict[int, tuple[str, int]] | None = None,
) -> AddressMap:
    """kproxy's own pure address map: nodes 0..max_node_id map, OS-chosen ports."""
    settings = parse_config(
        {
            "cluster": {"bootstrap_servers": ["bootstrap.invalid:9092"]},
            "listeners": {
                "advertised_host": KPROXY_HOST,
                "bootstrap_port": 0,
                "broker_port_base": 0,
                "max_node_id": max_node_id,
            },
        }
    )
    mapping = AddressMap(settings.cluster, settings.listeners)
    for node_id, (host, port) in (advertised or {}).items():
        mapping.learn(node_id, host, port, True)
    open_listeners(mapping, list(open_nodes))
    return mapping


def open_listeners(mapping: AddressMap, node_ids: list[int]) -> None:
    """What the runtime does for a step's nodes_needing_listeners (port 19000 + id)."""
    for node_id in node_ids:
        mapping.listener_bound(node_id, 19000 + node_id)


def session(
    mapping: AddressMap | None = None,
    max_in_flight: int = 100,
    refused_apis: frozenset[int] = CLIENT_REFUSED_APIS,
) -> ProxySession:
    limits = SessionLimits(1 << 20, max_in_flight)
    return ProxySession(mapping or address_map(), limits, refused_apis)


def joined(chunks: list[bytes | memoryview]) -> bytes:
    return b"".join(bytes(c) for c in chunks)


def client(s: ProxySession, data: bytes) -> ClientStep:
    return s.from_client(data, NOW)


def upstream(s: ProxySession, data: bytes) -> UpstreamStep:
    return s.from_upstream(data, LATER)


def metadata_request(corr: int) -> bytes:
    msg = MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    return encode_request_frame(msg, corr, "app")


def metadata_response(corr: int, brokers: list[tuple[int, str, int]]) -> bytes:
    msg = MetadataResponse(
        throttle_time=ZERO,
        brokers=tuple(MetadataResponseBroker(node_id=n, host=h, port=p) for n, h, p in brokers),
        cluster_id="c",
        controller_id=brokers[0][0],
        topics=(),
    )
    return encode_response_frame(msg, corr)


def produce_request(corr: int, acks: int, records: bytes | None = None) -> bytes:
    """A Produce v10 request to partition 0 of "t", its records the bytes given."""
    batch = None if records is None else Records(records)
    msg = ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(seconds=1),
        topic_data=(
            TopicProduceData(
                name="t", partition_data=(PartitionProduceData(index=0, records=batch),)
            ),
        ),
    )
    return encode_request_frame(msg, corr, "producer")


def produce_response(
    corr: int,
    error: ErrorCode = ErrorCode.none,
    leader: tuple[int, int] = (-1, -1),
    endpoints: tuple[NodeEndpoint, ...] = (),
    topic: str = "t",
) -> bytes:
    """A Produce v10 response for partition 0 (appended, by default)."""
    failed = error != ErrorCode.none
    current = LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1])
    msg = ProduceResponse(
        responses=(
            TopicProduceResponse(
                name=topic,
                partition_responses=(
                    PartitionProduceResponse(
                        index=0,
                        error_code=error,
                        base_offset=-1 if failed else 42,
                        log_append_time=None,
                        log_start_offset=-1 if failed else 0,
                        record_errors=(),
                        error_message=None,
                        current_leader=current,
                    ),
                ),
            ),
        ),
        throttle_time=ZERO,
        node_endpoints=endpoints,
    )
    return encode_response_frame(msg, corr)


def produce_redirect(corr: int, new_leader: int, host: str, port: int) -> bytes:
    """NOT_LEADER_OR_FOLLOWER with the KIP-951 CurrentLeader and NodeEndpoints."""
    endpoint = NodeEndpoint(node_id=new_leader, host=host, port=port, rack=None)
    return produce_response(corr, ErrorCode.not_leader_or_follower, (new_leader, 7), (endpoint,))


def request_with(api_key: int, version: int, corr: int, body: bytes = b"") -> bytes:
    """A request frame with a v1 header for any (key, version), known or not."""
    payload = struct.pack(">hhih", api_key, version, corr, 3) + b"app" + body
    return struct.pack(">i", len(payload)) + payload
