"""Golden frames written by hand, field by field from the schemas (docs/protocol.md §4):
the versions kio does not have (the ZooKeeper-era inter-broker messages removed in 4.0,
ShareFetch v0, Produce v0-2) and a few old client-facing versions. Each is written once
with the brokers' own endpoints and once with the mapped ones put in by hand.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from tests.golden.vectors import CLIENT_ID, CORRELATION_ID, RECORDS, TOPIC_ID, golden_target
from tests.raw_kafka import uvarint

# Primitive encoders (docs/protocol.md §4). Everything else below is written field by field.


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def string(v: str | None) -> bytes:
    """Classic (nullable) string: int16 length, -1 = null."""
    if v is None:
        return i16(-1)
    raw = v.encode()
    return i16(len(raw)) + raw


def cstring(v: str | None) -> bytes:
    """Compact (nullable) string: uvarint length + 1, 0 = null."""
    if v is None:
        return b"\x00"
    raw = v.encode()
    return uvarint(len(raw) + 1) + raw


def array(*items: bytes) -> bytes:
    return i32(len(items)) + b"".join(items)


def carray(*items: bytes) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


def i32s(*values: int) -> bytes:
    return array(*(i32(v) for v in values))


NO_TAGS = b"\x00"  # an empty tagged-field section


def response_frame(body: bytes, header_version: int) -> bytes:
    header = i32(CORRELATION_ID) + (NO_TAGS if header_version == 1 else b"")
    return i32(len(header) + len(body)) + header + body


def request_frame(api_key: int, version: int, body: bytes) -> bytes:
    """Request header v1 (every hand-written request here is non-flexible)."""
    header = i16(api_key) + i16(version) + i32(CORRELATION_ID) + string(CLIENT_ID)
    return i32(len(header) + len(body)) + header + body


Target = Callable[[int | None, str | None, str, int], tuple[str, int] | None]


def as_sent(node_id: int | None, listener: str | None, host: str, port: int) -> tuple[str, int]:
    return host, port


def as_mapped(
    node_id: int | None, listener: str | None, host: str, port: int
) -> tuple[str, int] | None:
    return golden_target(node_id, listener)


def metadata_v0(t: Target) -> bytes:
    """MetadataResponse v0: Brokers[] {NodeId, Host, Port}, Topics[] (no ThrottleTimeMs)."""
    brokers = []
    for node_id, host, port in ((1, "broker-1.internal", 9092), (99, "broker-99.internal", 9094)):
        new = t(node_id, None, host, port)
        if new is not None:
            brokers.append(i32(node_id) + string(new[0]) + i32(new[1]))
    partitions = array(
        i16(0) + i32(0) + i32(1) + i32s(1, 99) + i32s(1),  # ErrorCode, Index, LeaderId, R, Isr
        i16(0) + i32(1) + i32(99) + i32s(99) + i32s(99),
    )
    topics = array(i16(0) + string("orders") + partitions)
    return response_frame(array(*brokers) + topics, 0)


def find_coordinator_v0(t: Target, node_id: int, host: str, port: int) -> bytes:
    """FindCoordinatorResponse v0: ErrorCode, NodeId, Host, Port."""
    new = t(node_id, None, host, port)
    if new is None:  # unmappable: COORDINATOR_NOT_AVAILABLE with no address
        return response_frame(i16(15) + i32(node_id) + string("") + i32(-1), 0)
    return response_frame(i16(0) + i32(node_id) + string(new[0]) + i32(new[1]), 0)


def produce_v2(t: Target) -> bytes:
    """ProduceResponse v2 (3.9 only): Responses[] {Name, PartitionResponses[] {Index,
    ErrorCode, BaseOffset, LogAppendTimeMs}}, ThrottleTimeMs. No endpoints at all."""
    parts = array(
        i32(0) + i16(0) + i64(41) + i64(-1),
        i32(1) + i16(6) + i64(-1) + i64(-1),  # NOT_LEADER_OR_FOLLOWER
    )
    return response_frame(array(string("orders") + parts) + i32(0), 0)


def fetch_v4(t: Target) -> bytes:
    """FetchResponse v4: ThrottleTimeMs, Responses[] {Topic, Partitions[] {PartitionIndex,
    ErrorCode, HighWatermark, LastStableOffset, AbortedTransactions[] (nullable),
    Records (int32 length)}}."""
    p0 = i32(0) + i16(0) + i64(1) + i64(1) + i32(-1) + i32(len(RECORDS)) + RECORDS
    p1 = i32(1) + i16(6) + i64(-1) + i64(-1) + array(i64(7) + i64(0)) + i32(-1)
    return response_frame(i32(0) + array(string("orders") + array(p0, p1)), 0)


def share_fetch_v0(t: Target) -> bytes:
    """ShareFetchResponse v0 (3.9, flexible): ThrottleTimeMs, ErrorCode, ErrorMessage,
    Responses[] {TopicId, Partitions[] {PartitionIndex, ErrorCode, ErrorMessage,
    AcknowledgeErrorCode, AcknowledgeErrorMessage, CurrentLeader {LeaderId, LeaderEpoch},
    Records, AcquiredRecords[]}}, NodeEndpoints[] {NodeId, Host, Port, Rack}."""
    leader = i32(2) + i32(9) + NO_TAGS
    partition = (
        i32(0) + i16(6) + cstring(None) + i16(0) + cstring(None) + leader
        + b"\x01"  # Records: compact bytes, length 0 + 1
        + carray(i64(10) + i64(11) + i16(1) + NO_TAGS)  # AcquiredRecords
        + NO_TAGS
    )  # fmt: skip
    responses = carray(TOPIC_ID.bytes + carray(partition) + NO_TAGS)
    endpoints = []
    for node_id, host, port, rack in ((2, "broker-2.internal", 9093, "r2"),
                                      (99, "broker-99.internal", 9094, None)):  # fmt: skip
        new = t(node_id, None, host, port)
        if new is not None:
            endpoints.append(i32(node_id) + cstring(new[0]) + i32(new[1]) + cstring(rack) + NO_TAGS)
    body = i32(0) + i16(0) + cstring(None) + responses + carray(*endpoints) + NO_TAGS
    return response_frame(body, 1)


def leader_and_isr_v0(t: Target) -> bytes:
    """LeaderAndIsrRequest v0 (3.9): ControllerId, ControllerEpoch,
    UngroupedPartitionStates[] {TopicName, PartitionIndex, ControllerEpoch, Leader,
    LeaderEpoch, Isr[], PartitionEpoch, Replicas[]}, LiveLeaders[] {BrokerId, HostName, Port}."""
    states = array(
        string("orders") + i32(0) + i32(3) + i32(1) + i32(5) + i32s(1, 2) + i32(10) + i32s(1, 2),
        string("orders") + i32(1) + i32(3) + i32(99) + i32(2) + i32s(99) + i32(4) + i32s(99, 1),
    )
    leaders = []
    for node_id, host, port in ((1, "broker-1.internal", 9092), (99, "broker-99.internal", 9094)):
        new = t(node_id, None, host, port)
        if new is not None:
            leaders.append(i32(node_id) + string(new[0]) + i32(new[1]))
    return request_frame(4, 0, i32(1) + i32(3) + states + array(*leaders))


def update_metadata_v0(t: Target) -> bytes:
    """UpdateMetadataRequest v0 (3.9): ControllerId, ControllerEpoch,
    UngroupedPartitionStates[] {TopicName, PartitionIndex, ControllerEpoch, Leader,
    LeaderEpoch, Isr[], ZkVersion, Replicas[]}, LiveBrokers[] {Id, V0Host, V0Port}."""
    states = array(
        string("orders") + i32(0) + i32(3) + i32(2) + i32(6) + i32s(2) + i32(11) + i32s(2, 99),
    )
    brokers = []
    for node_id, host, port in ((2, "broker-2.internal", 9093), (99, "broker-99.internal", 9094)):
        new = t(node_id, None, host, port)
        if new is not None:
            brokers.append(i32(node_id) + string(new[0]) + i32(new[1]))
    return request_frame(6, 0, i32(1) + i32(3) + states + array(*brokers))


def update_metadata_v3(t: Target) -> bytes:
    """UpdateMetadataRequest v3 (3.9): ControllerId, ControllerEpoch,
    UngroupedPartitionStates[] (as v0), LiveBrokers[] {Id, Endpoints[] {Port, Host,
    Listener, SecurityProtocol}, Rack (nullable)}."""
    states = array(
        string("orders") + i32(2) + i32(3) + i32(1) + i32(7) + i32s(1) + i32(12) + i32s(1),
    )

    def endpoint(node_id: int, listener: str, host: str, port: int, proto: int) -> bytes:
        new = t(node_id, listener, host, port)
        if new is None:
            return b""
        return i32(new[1]) + string(new[0]) + string(listener) + i16(proto)

    def broker(node_id: int, rack: str | None, *eps: bytes) -> bytes:
        kept = [e for e in eps if e]
        return i32(node_id) + array(*kept) + string(rack)

    brokers = array(
        broker(1, "r1",
               endpoint(1, "PLAINTEXT", "broker-1.internal", 9092, 0),
               endpoint(1, "SSL", "broker-1.internal", 9192, 1)),
        broker(99, None, endpoint(99, "PLAINTEXT", "broker-99.internal", 9094, 0)),
    )  # fmt: skip
    return request_frame(6, 3, i32(1) + i32(3) + states + brokers)


HAND_FRAMES: dict[str, Callable[[Target], bytes]] = {
    "metadata_v0_response": metadata_v0,
    "find_coordinator_v0_response": lambda t: find_coordinator_v0(t, 1, "broker-1.internal", 9092),
    "find_coordinator_v0_unmapped_response": lambda t: find_coordinator_v0(
        t, 99, "broker-99.internal", 9094
    ),
    "produce_v2_response": produce_v2,
    "fetch_v4_response": fetch_v4,
    "share_fetch_v0_response": share_fetch_v0,
    "leader_and_isr_v0_request": leader_and_isr_v0,
    "update_metadata_v0_request": update_metadata_v0,
    "update_metadata_v3_request": update_metadata_v3,
}
