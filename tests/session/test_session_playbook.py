"""Session playbooks: these bytes in from this side -> these chunks out, these facts, this close.

No sockets and no event loop: `ProxySession` is driven directly, every frame built and
every output decoded with kio (an independent codec), in the manner of mitmproxy's
layer tests. Each rule the session owns has a play here: admission errors, acks=0,
the in-flight cap, the ApiVersions v0 header and clamp, endpoint rewriting and
removal, request-side reverse mapping, a new node id held for its listener, bytes after
a response's message, and a correlation id nobody waits for.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.api_versions.v0.response import ApiVersion
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v3.response import FindCoordinatorResponse
from kio.schema.metadata.v12.response import MetadataResponse
from kio.schema.produce.v10.response import ProduceResponse
from kio.schema.update_raft_voter.v0.request import (
    KRaftVersionFeature,
    Listener,
    UpdateRaftVoterRequest,
)

from kproxy.runtime.mapping import AddressMap
from tests.kio_support import (
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
)
from tests.session.frames import (
    KPROXY_HOST,
    LATER,
    NOW,
    ZERO,
    address_map,
    client,
    joined,
    metadata_request,
    metadata_response,
    open_listeners,
    produce_redirect,
    produce_request,
    produce_response,
    request_with,
    session,
    upstream,
)

# --------------------------------------------------------------------------- admission


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        pytest.param(request_with(9999, 0, 1), "unknown_api_key", id="unknown-api-key"),
        pytest.param(request_with(3, 99, 1), "unknown_api_version", id="unknown-version"),
        pytest.param(request_with(17, 0, 1), "sasl_handshake_v0", id="sasl-handshake-v0"),
        pytest.param(struct.pack(">i", -5), "negative_frame_size", id="negative-size"),
        pytest.param(struct.pack(">i", 2 << 20), "frame_too_large", id="over-the-frame-limit"),
        pytest.param(b"\x16\x03\x01\x02\x00\x01", "tls_on_plain_port", id="tls-client-hello"),
        pytest.param(b"GET / HTTP/1.1\r\n", "http_on_kafka_port", id="http-request"),
        pytest.param(struct.pack(">i", 4) + b"\x00\x03\x00\x0c", "malformed", id="short-header"),
    ],
)
def test_refused_requests_close_the_client_side(frame: bytes, reason: str) -> None:
    s = session()
    step = client(s, frame)
    assert step.to_upstream == []
    assert step.close is not None
    assert (step.close.side, step.close.reason) == ("client", reason)
    assert step.close.cause == f"client_{reason}"
    assert step.close.message  # a log line needs words
    assert len(s.inflight) == 0


def test_a_request_before_a_refused_one_in_the_same_read_is_not_forwarded() -> None:
    s = session()
    step = client(s, metadata_request(1) + request_with(9999, 0, 2))
    assert step.close is not None and step.close.reason == "unknown_api_key"
    assert step.to_upstream == []


# --------------------------------------------------------------------------- requests


def test_requests_pass_untouched_and_are_recorded() -> None:
    s = session()
    frame = metadata_request(5)
    step = client(s, frame)
    assert step.close is None and not step.pause_reading
    assert joined(step.to_upstream) == frame
    assert step.requests == [(3, len(frame) - 4)]
    assert len(s.inflight) == 1


def test_a_frame_read_alone_and_unchanged_is_forwarded_as_the_buffer_read() -> None:
    s = session()
    request = produce_request(5, acks=1)
    sent = client(s, request).to_upstream
    assert len(sent) == 1 and sent[0] is request  # not a new size prefix and a view
    response = produce_response(5)
    got = upstream(s, response).to_client
    assert len(got) == 1 and got[0] is response
    # An idle connection keeps neither chunk alive.
    assert s.client_reader.whole is None and s.upstream_reader.whole is None
    # Two requests in one read: each is framed anew, and the bytes are the same.
    both = produce_request(6, acks=1) + produce_request(7, acks=1)
    assert joined(client(s, both).to_upstream) == both
    # A response that is rewritten is never the buffer read.
    mapped = address_map()
    s = session(mapped)
    client(s, metadata_request(1))
    response = metadata_response(1, [(1, "broker-1.kafka.invalid", 9092)])
    step = upstream(s, response)
    open_listeners(mapped, step.nodes_needing_listeners)
    released = s.listeners_opened(LATER).to_client
    assert all(c is not response for c in released)
    assert b"kafka.invalid" not in joined(released)


def test_byte_by_byte_requests_come_out_whole() -> None:
    s = session()
    frame = metadata_request(5)
    out = b""
    for i in range(len(frame)):
        out += joined(client(s, frame[i : i + 1]).to_upstream)
    assert out == frame
    assert s.client_bytes_pending == 0


def test_truncated_request_is_pending_at_close() -> None:
    s = session()
    frame = metadata_request(5)
    client(s, frame[:-3])
    assert s.client_bytes_pending == len(frame) - 3


def test_produce_acks_0_holds_no_in_flight_slot() -> None:
    s = session()
    step = client(s, produce_request(1, acks=0) + produce_request(2, acks=1))
    assert joined(step.to_upstream) == produce_request(1, acks=0) + produce_request(2, acks=1)
    assert len(s.inflight) == 1  # only the acks=1 request waits for an answer


def test_in_flight_cap_pauses_and_resumes_reading() -> None:
    s = session(max_in_flight=2)
    assert not client(s, metadata_request(1)).pause_reading
    step = client(s, metadata_request(2))
    assert step.pause_reading  # the cap is reached: stop reading the client
    broker = [(1, "broker-1.invalid", 9092)]
    assert isinstance(s.mapping, AddressMap)
    open_listeners(s.mapping, [1])
    back = upstream(s, metadata_response(1, broker))
    assert back.resume_reading  # below half the cap again
    assert not upstream(s, metadata_response(2, broker)).resume_reading  # only once


def heartbeat_response(corr: int) -> bytes:
    return struct.pack(">iih", 6, corr, 0)  # Heartbeat v3: header v0, no error


def test_an_unwalked_response_frees_a_slot_for_a_waiting_request() -> None:
    # Heartbeat is never walked: its responses leave without being held, and must still
    # let the requests read past the in-flight cap go, then reading resume.
    s = session(max_in_flight=2)
    requests = [request_with(12, 3, corr) for corr in (1, 2, 3)]
    first = client(s, b"".join(requests))
    assert first.pause_reading and first.held == 1
    assert joined(first.to_upstream) == requests[0] + requests[1]
    assert s.unanswered == 3  # two in flight, one waiting: what a close now leaves
    back = upstream(s, heartbeat_response(1))
    assert joined(back.to_client) == heartbeat_response(1)
    assert joined(back.to_upstream) == requests[2]  # the waiting one takes the freed slot
    assert back.requests == [(12, len(requests[2]) - 4)] and not back.resume_reading
    assert upstream(s, heartbeat_response(2)).resume_reading  # below half the cap again
    last = upstream(s, heartbeat_response(3))
    assert not last.resume_reading and joined(last.to_client) == heartbeat_response(3)
    assert not s.answering and s.unanswered == 0


def test_request_endpoints_are_mapped_back_to_the_cluster() -> None:
    mapping = address_map(open_nodes=(2,), advertised={2: ("controller-2.invalid", 9093)})
    s = session(mapping, refused_apis=frozenset())  # a listener that serves the controller plane

    def voter_update(host: str, port: int) -> Any:
        return UpdateRaftVoterRequest(
            cluster_id="c",
            current_leader_epoch=3,
            voter_id=2,
            voter_directory_id=uuid.UUID(int=2),
            listeners=(
                Listener(name="CONTROLLER", host=host, port=port),
                Listener(name="OTHER", host="elsewhere.invalid", port=1234),
            ),
            k_raft_version_feature=KRaftVersionFeature(
                min_supported_version=0, max_supported_version=1
            ),
        )

    step = client(s, encode_request_frame(voter_update(KPROXY_HOST, 19002), 4, "ctl"))
    _key, _version, corr, _cid, msg = decode_request_frame(joined(step.to_upstream))
    assert corr == 4
    assert msg == voter_update("controller-2.invalid", 9093)


# --------------------------------------------------------------------------- responses


def test_new_node_is_held_until_its_listener_is_open_then_rewritten() -> None:
    mapping = address_map()
    s = session(mapping)
    client(s, metadata_request(1))
    brokers = [(1, "broker-1.invalid", 9092), (2, "broker-2.invalid", 9092)]
    step = upstream(s, metadata_response(1, brokers))
    assert step.to_client == [] and step.responses == []
    assert step.nodes_needing_listeners == [1, 2]
    assert [tuple(n) for n in step.learned] == [
        (1, "broker-1.invalid", 9092),
        (2, "broker-2.invalid", 9092),
    ]
    open_listeners(mapping, step.nodes_needing_listeners)
    released = s.listeners_opened(LATER)
    corr, msg = decode_response_frame(MetadataResponse, joined(released.to_client))
    assert corr == 1
    assert [(b.node_id, b.host, b.port) for b in msg.brokers] == [
        (1, KPROXY_HOST, 19001),
        (2, KPROXY_HOST, 19002),
    ]
    (seen,) = released.responses
    assert (seen.api_key, seen.rewritten, seen.removed) == (3, 2, 0)
    assert seen.received == NOW and seen.upstream_seconds == LATER - NOW
    assert len(s.inflight) == 0


def test_unmappable_node_is_removed_and_reported() -> None:
    mapping = address_map(max_node_id=5, open_nodes=(1,))
    s = session(mapping)
    client(s, metadata_request(1))
    step = upstream(s, metadata_response(1, [(1, "b1.invalid", 9092), (700, "b700.invalid", 9092)]))
    assert step.nodes_needing_listeners == []
    _, msg = decode_response_frame(MetadataResponse, joined(step.to_client))
    assert [(b.node_id, b.host, b.port) for b in msg.brokers] == [(1, KPROXY_HOST, 19001)]
    assert step.unmapped == [700]
    assert (step.responses[0].rewritten, step.responses[0].removed) == (1, 1)


def test_find_coordinator_for_an_unmappable_node_says_not_available() -> None:
    s = session(address_map(max_node_id=5))
    client(s, encode_request_frame(FindCoordinatorRequest(key="g", key_type=0), 3, "app"))
    answer = FindCoordinatorResponse(
        throttle_time=ZERO,
        error_code=ErrorCode.none,
        error_message=None,
        node_id=900,
        host="coordinator.invalid",
        port=9092,
    )
    step = upstream(s, encode_response_frame(answer, 3))
    _, msg = decode_response_frame(FindCoordinatorResponse, joined(step.to_client))
    assert msg.error_code == ErrorCode.coordinator_not_available
    assert (msg.host, msg.port) == ("", -1)


def test_kip951_redirect_is_rewritten_and_reports_the_leader() -> None:
    mapping = address_map(open_nodes=(3,))
    s = session(mapping)
    client(s, produce_request(8, acks=1))
    step = upstream(s, produce_redirect(8, 3, "broker-3.invalid", 9092))
    _, msg = decode_response_frame(ProduceResponse, joined(step.to_client))
    assert [(e.node_id, e.host, e.port) for e in msg.node_endpoints] == [(3, KPROXY_HOST, 19003)]
    (seen,) = step.responses
    assert seen.endpoint_nodes == frozenset({3})
    assert seen.leaders is not None
    (leader,) = seen.leaders
    assert (leader.topic, leader.partition, leader.leader_id, leader.leader_epoch) == ("t", 0, 3, 7)
    assert leader.hint and leader.error_code == ErrorCode.not_leader_or_follower.value


def test_api_versions_v0_uses_header_v0_and_is_clamped() -> None:
    s = session()
    client(s, encode_request_frame(ApiVersionsRequestV0(), 1, "app"))
    answer = ApiVersionsResponseV0(
        error_code=ErrorCode.none,
        api_keys=(
            ApiVersion(api_key=3, min_version=0, max_version=12),
            ApiVersion(api_key=3000, min_version=0, max_version=1),  # no such API
        ),
    )
    step = upstream(s, encode_response_frame(answer, 1))
    corr, msg = decode_response_frame(ApiVersionsResponseV0, joined(step.to_client))
    assert corr == 1
    assert [a.api_key for a in msg.api_keys] == [3]
    assert step.clamped == [(1, 0)]


def test_responses_split_anywhere_come_out_the_same() -> None:
    whole_session = session(address_map(open_nodes=(1,)))
    client(whole_session, metadata_request(1))
    response = metadata_response(1, [(1, "broker-1.invalid", 9092)])
    expected = joined(upstream(whole_session, response).to_client)
    for cut in range(1, len(response)):
        s = session(address_map(open_nodes=(1,)))
        client(s, metadata_request(1))
        out = joined(upstream(s, response[:cut]).to_client)
        out += joined(upstream(s, response[cut:]).to_client)
        assert out == expected, cut


def test_bytes_after_a_response_s_message_are_cut_and_reported() -> None:
    # librdkafka's mock cluster sends one; here they name a broker. kio refuses any byte
    # after a message, so decoding what the client got shows the frame was cut to it.
    s = session(address_map(open_nodes=(1,)))
    client(s, metadata_request(1))
    response = metadata_response(1, [(1, "broker-1.invalid", 9092)])
    after = b"\x00\x10broker-9.invalid"
    body = response[4:] + after
    step = upstream(s, struct.pack(">i", len(body)) + body)
    assert step.close is None
    out = joined(step.to_client)
    _, msg = decode_response_frame(MetadataResponse, out)
    assert [(b.node_id, b.host, b.port) for b in msg.brokers] == [(1, KPROXY_HOST, 19001)]
    assert b".invalid" not in out
    assert step.trimmed == [(3, len(after))]  # Metadata (api 3), the bytes kept back


def test_response_nobody_waits_for_closes_the_upstream_side() -> None:
    s = session(address_map(open_nodes=(1,)))
    client(s, metadata_request(1))
    step = upstream(s, metadata_response(2, [(1, "broker-1.invalid", 9092)]))
    assert step.to_client == []
    assert step.close is not None
    assert step.close.cause == "upstream_unexpected_correlation_id"


def test_malformed_response_closes_the_upstream_side() -> None:
    s = session()
    client(s, metadata_request(1))
    step = upstream(s, struct.pack(">i", 6) + struct.pack(">i", 1) + b"\x00\x00")
    assert step.close is not None and step.close.side == "upstream"
    assert step.to_client == []


def test_an_error_answer_with_no_node_passes_untouched() -> None:
    """GROUP_AUTHORIZATION_FAILED (or a coordinator not ready) names node -1 and no
    address: the client gets it byte for byte, so it fails (or retries) as it would
    directly; nothing is counted or logged as unmapped."""
    s = session()
    client(s, encode_request_frame(FindCoordinatorRequest(key="g", key_type=0), 3, "app"))
    answer = encode_response_frame(
        FindCoordinatorResponse(
            throttle_time=ZERO,
            error_code=ErrorCode.group_authorization_failed,
            error_message="Not authorized",
            node_id=-1,
            host="",
            port=-1,
        ),
        3,
    )
    step = upstream(s, answer)
    assert joined(step.to_client) == answer
    assert step.unmapped == [] and step.nodes_needing_listeners == []
    assert (step.responses[0].rewritten, step.responses[0].removed) == (0, 0)


def test_a_redirect_already_naming_kproxy_still_reports_its_endpoint_nodes() -> None:
    # A broker (or a controller carried by kproxy) may advertise kproxy's own address:
    # nothing is rewritten, yet the client was told the new leader's address (KIP-951).
    s = session(address_map(open_nodes=(2,)))
    client(s, produce_request(4, acks=1))
    step = upstream(s, produce_redirect(4, 2, KPROXY_HOST, 19002))
    (seen,) = step.responses
    assert (seen.rewritten, seen.removed) == (0, 0)
    assert seen.endpoint_nodes == {2}
