"""Session playbooks for the limits that hold against hostile clients: the controller
plane refused on client listeners, unknown ApiVersions versions answered as a broker
answers them, the in-flight limit held per request, and the walker's caps."""

from __future__ import annotations

import datetime
import struct
import uuid

import pytest
from kio.schema.add_raft_voter.v1.request import AddRaftVoterRequest
from kio.schema.add_raft_voter.v1.request import Listener as VoterListener
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.response import MetadataResponse

from kproxy.protocol.walker import MAX_REQUEST_ENDPOINTS, MAX_RESPONSE_ENDPOINTS
from kproxy.session import ProxySession, SessionLimits
from kproxy.session.admission import CLIENT_REFUSED_APIS
from tests.kio_support import decode_response_frame, encode_request_frame
from tests.session.frames import (
    address_map,
    client,
    joined,
    metadata_request,
    metadata_response,
    produce_request,
    produce_response,
    request_with,
    session,
    upstream,
)

CONTROLLER_PLANE = {
    "Vote": 52,
    "BeginQuorumEpoch": 53,
    "EndQuorumEpoch": 54,
    "AlterPartition": 56,
    "Envelope": 58,
    "FetchSnapshot": 59,
    "BrokerRegistration": 62,
    "BrokerHeartbeat": 63,
    "ControllerRegistration": 70,
    "UpdateRaftVoter": 82,
    "LeaderAndIsr": 4,
    "UpdateMetadata": 6,
}


def test_the_refused_set_is_kafkas_controller_plane() -> None:
    assert set(CONTROLLER_PLANE.values()) <= CLIENT_REFUSED_APIS
    # Brokers serve these to admin clients (and forward them to the controller).
    assert not {55, 80, 81, 0, 1, 3, 18} & CLIENT_REFUSED_APIS


@pytest.mark.parametrize(("name", "api_key"), CONTROLLER_PLANE.items())
def test_client_listener_refuses_the_controller_plane(name: str, api_key: int) -> None:
    s = session()
    step = client(s, request_with(api_key, 0, 1, b"\x00" * 32))
    assert step.to_upstream == []
    assert step.close is not None
    assert step.close.cause == "client_api_not_allowed"
    assert name in step.close.message


def test_a_large_controller_plane_request_is_refused_from_its_first_bytes() -> None:
    """A 32 MiB BrokerRegistration is refused once 64 KiB of it are in, never gathered."""
    s = ProxySession(address_map(), SessionLimits(100 << 20, 1000))
    size = 32 << 20
    head = request_with(62, 0, 1, b"\x00" * (70_000 - 14))
    frame_start = struct.pack(">i", size) + head[4:]
    step = client(s, frame_start)
    assert step.close is not None and step.close.reason == "api_not_allowed"
    assert step.to_upstream == []


def test_controller_role_serves_the_controller_plane() -> None:
    s = session(refused_apis=frozenset())
    frame = request_with(63, 0, 1, b"\x00" * 32)  # BrokerHeartbeat: forwarded untouched
    step = client(s, frame)
    assert step.close is None and joined(step.to_upstream) == frame


def test_unknown_api_versions_version_is_answered_like_a_broker_does() -> None:
    """KIP-511: UNSUPPORTED_VERSION in a v0 body with kproxy's range; the client retries."""
    s = session()
    step = client(s, request_with(18, 99, 42))
    assert step.close is None and step.to_upstream == []
    corr, answer = decode_response_frame(ApiVersionsResponseV0, joined(step.to_client))
    assert corr == 42
    assert answer.error_code == ErrorCode.unsupported_version
    (versions,) = answer.api_keys
    assert (versions.api_key, versions.min_version) == (18, 0)
    assert versions.max_version >= 3
    assert len(s.inflight) == 0


def test_unknown_api_versions_version_behind_other_requests_closes() -> None:
    """Answering it then would put its response before earlier ones: close instead."""
    s = session()
    step = client(s, metadata_request(1) + request_with(18, 99, 2))
    assert step.close is not None and step.close.reason == "unknown_api_version"


def test_in_flight_limit_holds_per_request_and_loses_nothing() -> None:
    s = session(address_map(open_nodes=(1,)), max_in_flight=2)
    requests = [metadata_request(corr) for corr in range(1, 6)]
    step = client(s, b"".join(requests))
    assert joined(step.to_upstream) == requests[0] + requests[1]
    assert step.held == 3 and step.pause_reading
    assert len(s.inflight) == 2
    forwarded = [joined(step.to_upstream)]
    answered = []
    broker = [(1, "broker-1.invalid", 9092)]
    resumed = []
    for corr in range(1, 6):
        back = upstream(s, metadata_response(corr, broker))
        assert back.close is None
        answered.append(decode_response_frame(MetadataResponse, joined(back.to_client))[0])
        forwarded.append(joined(back.to_upstream))
        assert len(s.inflight) <= 2
        resumed.append(back.resume_reading)
    assert b"".join(forwarded) == b"".join(requests)  # every request once, in order
    assert answered == [1, 2, 3, 4, 5]
    # Reading resumes once nothing waits and in-flight fell below half the limit.
    assert resumed == [False, False, False, True, False]
    assert len(s.inflight) == 0


def test_requests_read_while_held_wait_behind_the_held_ones() -> None:
    s = session(address_map(open_nodes=(1,)), max_in_flight=1)
    first = client(s, metadata_request(1) + metadata_request(2))
    assert first.held == 1
    late = client(s, metadata_request(3))  # arrives although reading was paused
    assert late.to_upstream == [] and late.held == 1  # counted once: only the newcomer
    back = upstream(s, metadata_response(1, [(1, "b.invalid", 9092)]))
    assert joined(back.to_upstream) == metadata_request(2)


def test_waiting_requests_are_bounded() -> None:
    s = session(max_in_flight=1)
    client(s, metadata_request(1) + metadata_request(2))
    filler = metadata_request(3) * ((2 << 20) // len(metadata_request(3)))
    step = client(s, filler)
    assert step.close is not None and step.close.reason == "too_many_requests_waiting"


def test_response_with_more_endpoints_than_a_cluster_has_is_refused() -> None:
    s = session()
    client(s, metadata_request(1))
    brokers = [(i, "b.invalid", 9092) for i in range(MAX_RESPONSE_ENDPOINTS + 1)]
    step = upstream(s, metadata_response(1, brokers))
    assert step.close is not None and step.close.cause == "upstream_too_many_endpoints"


def test_request_with_more_listeners_than_a_node_has_is_refused() -> None:
    msg = AddRaftVoterRequest(
        cluster_id="c",
        timeout=datetime.timedelta(seconds=1),
        voter_id=4,
        voter_directory_id=uuid.UUID(int=4),
        listeners=tuple(
            VoterListener(name=f"L{i}", host="h.invalid", port=1)
            for i in range(MAX_REQUEST_ENDPOINTS + 1)
        ),
        ack_when_committed=True,
    )
    s = session()
    step = client(s, encode_request_frame(msg, 1, "admin"))
    assert step.close is not None and step.close.cause == "client_too_many_endpoints"


def test_too_many_tagged_fields_in_a_struct_is_refused() -> None:
    s = session()
    client(s, metadata_request(1))
    good = metadata_response(1, [(1, "b.invalid", 9092)])
    # The top-level tagged section is the last byte (0 fields): replace it with 65 fields.
    tags = bytes([65]) + b"".join(bytes([tag, 0]) for tag in range(65))
    body = good[4:-1] + tags
    step = upstream(s, struct.pack(">i", len(body)) + body)
    assert step.close is not None and step.close.reason == "too_many_tagged_fields"


def test_close_forgets_every_request_and_byte() -> None:
    s = session(max_in_flight=1)
    client(s, metadata_request(1) + metadata_request(2) + metadata_request(3)[:7])
    assert len(s.inflight) == 1
    s.close()
    assert len(s.inflight) == 0 and s.client_bytes_pending == 0
    assert s.inflight.unanswered == 0


def large_produce(corr: int) -> bytes:
    """A 300 KB Produce request: forwarded as it arrives (STREAM_REQUESTS_AFTER)."""
    return produce_request(corr, acks=-1, records=bytes(range(256)) * 1200)


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("max_in_flight", [1, 2, 3])
def test_a_large_request_filling_the_last_slot_is_read_to_its_end(max_in_flight: int) -> None:
    """The request that takes the last in-flight slot is on its way to the broker as it
    arrives: reading must not pause inside it, or the broker never gets its end and
    never answers. Reading pauses once it is all there, and resumes when its response
    frees the slot."""
    s = session(address_map(open_nodes=(1,)), max_in_flight=max_in_flight)
    small = [metadata_request(corr) for corr in range(1, max_in_flight)]
    request = large_produce(max_in_flight)
    reads = [b"".join(small) + request[:20_000], *pieces(request[20_000:], 70_000)]
    forwarded, paused_before_end = [], False
    for i, data in enumerate(reads):
        step = client(s, data)
        assert step.close is None and step.held == 0
        forwarded.append(joined(step.to_upstream))
        paused_before_end |= step.pause_reading and i < len(reads) - 1
    assert not paused_before_end
    assert step.pause_reading  # the last piece read: every slot taken
    assert b"".join(forwarded) == b"".join(small) + request
    broker = [(1, "broker-1.invalid", 9092)]
    for corr in range(1, max_in_flight):
        assert upstream(s, metadata_response(corr, broker)).close is None
    back = upstream(s, produce_response(max_in_flight))
    assert struct.unpack_from(">i", joined(back.to_client), 4)[0] == max_in_flight
    assert len(s.inflight) == 0 and not s.streaming_request


def test_a_large_request_that_waited_for_a_slot_is_read_to_its_end_once_released() -> None:
    """A large request whose first bytes arrive while every slot is taken waits, and
    reading pauses; the response that frees the slot releases its start, and reading
    resumes until its end, though the slot is taken again."""
    s = session(address_map(open_nodes=(1,)), max_in_flight=1)
    request = large_produce(2)
    first = client(s, metadata_request(1) + request[:70_000])
    assert joined(first.to_upstream) == metadata_request(1)
    assert first.held == 1 and first.pause_reading
    back = upstream(s, metadata_response(1, [(1, "broker-1.invalid", 9092)]))
    assert back.resume_reading and joined(back.to_upstream) == request[:70_000]
    rest = [client(s, data) for data in pieces(request[70_000:], 70_000)]
    assert not any(step.pause_reading for step in rest[:-1]) and rest[-1].pause_reading
    assert b"".join(joined(step.to_upstream) for step in rest) == request[70_000:]
    done = upstream(s, produce_response(2))
    assert struct.unpack_from(">i", joined(done.to_client), 4)[0] == 2 and done.resume_reading
