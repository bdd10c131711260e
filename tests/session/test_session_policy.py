"""Session playbooks for a listener's API policy: refused requests answered in order
with the API's authorization error, ApiVersions without the refused keys, a reload that
changes the policy for established sessions, and the refusals that must close."""

from __future__ import annotations

import datetime
import struct

from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.api_versions.v0.response import ApiVersion
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.delete_topics.v5.request import DeleteTopicsRequest
from kio.schema.delete_topics.v5.response import DeleteTopicsResponse
from kio.schema.errors import ErrorCode

from kproxy.session import ProxySession, SessionLimits
from kproxy.session.admission import CLIENT_REFUSED_APIS
from kproxy.session.policy import ALWAYS_ALLOWED, ApiPolicy
from tests.kio_support import decode_response_frame, encode_request_frame, encode_response_frame
from tests.session.frames import (
    LATER,
    address_map,
    client,
    joined,
    metadata_request,
    metadata_response,
    produce_request,
    upstream,
)

DELETE_TOPICS, PRODUCE, METADATA = 20, 0, 3


def policy_session(denied: set[int], max_in_flight: int = 100) -> ProxySession:
    policy = ApiPolicy("gateway", frozenset(denied))
    mapping = address_map(open_nodes=(1,))
    return ProxySession(mapping, SessionLimits(1 << 20, max_in_flight), CLIENT_REFUSED_APIS, policy)


def delete_topics(corr: int, *names: str) -> bytes:
    msg = DeleteTopicsRequest(topic_names=names, timeout=datetime.timedelta(seconds=1))
    return encode_request_frame(msg, corr, "admin")


def refusal(frame: bytes) -> DeleteTopicsResponse:
    corr, msg = decode_response_frame(DeleteTopicsResponse, frame)
    assert corr == 9
    return msg


def test_a_refused_request_is_answered_and_never_forwarded() -> None:
    s = policy_session({DELETE_TOPICS})
    step = client(s, delete_topics(9, "orders", "audit"))
    assert step.to_upstream == [] and step.close is None
    msg = refusal(joined(step.to_client))
    assert [(r.name, r.error_code) for r in msg.responses] == [
        ("orders", ErrorCode.topic_authorization_failed),
        ("audit", ErrorCode.topic_authorization_failed),
    ]
    assert [r.api_key for r in step.refused] == [DELETE_TOPICS]
    assert not s.inflight


def test_a_refusal_follows_the_responses_before_it_and_holds_nothing() -> None:
    """Responses keep their order: the refusal follows the Metadata answer that was
    asked for first. Nothing waits for it: the request after it goes to the broker at
    once, no request is held, reading never pauses, and the refusal is counted as the
    request arrives."""
    s = policy_session({DELETE_TOPICS})
    step = client(s, metadata_request(8) + delete_topics(9, "orders") + metadata_request(10))
    assert joined(step.to_upstream) == metadata_request(8) + metadata_request(10)
    assert step.to_client == [] and not step.pause_reading and step.held == 0
    assert [r.api_key for r in step.refused] == [DELETE_TOPICS]
    assert s.waiting_bytes == 0
    step = upstream(s, metadata_response(8, [(1, "b1", 9092)]))
    out = joined(step.to_client)
    first_size = struct.unpack(">i", out[:4])[0]
    assert struct.unpack(">i", out[4:8])[0] == 8  # the Metadata answer first
    assert [r.name for r in refusal(out[4 + first_size :]).responses] == ["orders"]
    assert (
        step.to_upstream == []
        and not step.resume_reading
        and [r.api_key for r in step.refused] == []
    )
    step = upstream(s, metadata_response(10, [(1, "b1", 9092)]))
    assert struct.unpack(">i", joined(step.to_client)[4:8])[0] == 10
    assert not s.answering


def test_refusals_in_a_row_follow_the_response_before_them_in_order() -> None:
    s = policy_session({DELETE_TOPICS})
    step = client(s, metadata_request(8) + delete_topics(9, "a") + delete_topics(11, "b"))
    assert [r.api_key for r in step.refused] == [
        DELETE_TOPICS,
        DELETE_TOPICS,
    ] and not step.pause_reading
    out = joined(upstream(s, metadata_response(8, [(1, "b1", 9092)])).to_client)
    frames, pos = [], 0
    while pos < len(out):
        size = struct.unpack_from(">i", out, pos)[0]
        frames.append(out[pos : pos + 4 + size])
        pos += 4 + size
    assert [struct.unpack_from(">i", f, 4)[0] for f in frames] == [8, 9, 11]
    assert [
        r.name for r in decode_response_frame(DeleteTopicsResponse, frames[2])[1].responses
    ] == ["b"]


def test_a_refusal_follows_a_response_held_for_a_listener() -> None:
    """A response that names a node with no listener yet is held until the runtime opens
    one; a refusal that came after its request still goes out after it."""
    policy = ApiPolicy("gateway", frozenset({DELETE_TOPICS}))
    s = ProxySession(address_map(), SessionLimits(1 << 20, 100), CLIENT_REFUSED_APIS, policy)
    client(s, metadata_request(8))
    held = upstream(s, metadata_response(8, [(1, "b1", 9092)]))
    assert held.nodes_needing_listeners == [1] and held.to_client == []
    step = client(s, delete_topics(9, "orders"))
    assert (
        step.to_client == []
        and [r.api_key for r in step.refused] == [DELETE_TOPICS]
        and not step.pause_reading
    )
    s.mapping.listener_bound(1, 19001)
    out = joined(s.listeners_opened(LATER).to_client)
    first_size = struct.unpack(">i", out[:4])[0]
    assert struct.unpack(">i", out[4:8])[0] == 8
    assert [r.name for r in refusal(out[4 + first_size :]).responses] == ["orders"]


def advertised_keys(s: ProxySession) -> list[int]:
    """The API keys an ApiVersions v0 answer offers after it passed the session."""
    client(s, encode_request_frame(ApiVersionsRequestV0(), 1, "app"))
    answer = ApiVersionsResponseV0(
        error_code=ErrorCode.none,
        api_keys=(
            ApiVersion(api_key=METADATA, min_version=0, max_version=12),
            ApiVersion(api_key=DELETE_TOPICS, min_version=1, max_version=6),
        ),
    )
    step = upstream(s, encode_response_frame(answer, 1))
    _, msg = decode_response_frame(ApiVersionsResponseV0, joined(step.to_client))
    return [a.api_key for a in msg.api_keys]


def test_api_versions_stops_advertising_refused_apis() -> None:
    assert advertised_keys(policy_session({DELETE_TOPICS})) == [METADATA]


def test_advertise_denied_keeps_refused_apis_in_api_versions_and_still_refuses() -> None:
    policy = ApiPolicy("gateway", frozenset({DELETE_TOPICS}), advertise_denied=True)
    s = ProxySession(address_map(), SessionLimits(1 << 20, 100), CLIENT_REFUSED_APIS, policy)
    assert advertised_keys(s) == [METADATA, DELETE_TOPICS]
    step = client(s, delete_topics(9, "a"))
    assert step.to_upstream == [] and [r.api_key for r in step.refused] == [DELETE_TOPICS]


def test_a_policy_update_holds_for_an_established_session() -> None:
    policy = ApiPolicy("gateway")
    s = ProxySession(address_map(), SessionLimits(1 << 20, 100), CLIENT_REFUSED_APIS, policy)
    assert joined(client(s, delete_topics(9, "a")).to_upstream) == delete_topics(9, "a")
    s.inflight.pop(9)  # answered
    policy.update("gateway", frozenset({DELETE_TOPICS}), advertise_denied=False)
    step = client(s, delete_topics(9, "a"))
    assert step.to_upstream == [] and [r.api_key for r in step.refused] == [DELETE_TOPICS]


def test_a_refused_produce_with_acks_0_closes_the_connection() -> None:
    """acks=0 asks for no response, so none can carry the error: a broker closes."""
    s = policy_session({PRODUCE})
    step = client(s, produce_request(3, acks=0))
    assert step.close is not None and step.close.reason == "api_denied"
    assert step.to_upstream == []
    step = client(policy_session({PRODUCE}), produce_request(3, acks=1))
    assert step.close is None and step.to_client and [r.api_key for r in step.refused] == [PRODUCE]


def test_what_a_client_needs_first_is_never_refused() -> None:
    assert ApiPolicy("x", ALWAYS_ALLOWED | {DELETE_TOPICS}).denied == {DELETE_TOPICS}


def test_a_denied_large_request_read_past_its_start_closes_the_connection() -> None:
    """A large denied request must be read whole to be refused entity by entity. When
    its start waited for a slot and more of it was read all the same (a runtime that
    did not pause), it can no longer be: the connection is closed with a reason, and
    nothing of it reaches the broker."""
    s = policy_session({PRODUCE}, max_in_flight=1)
    large = produce_request(2, acks=1, records=b"\x05" * 80_000)
    first = client(s, metadata_request(1) + large[:70_000])
    assert first.held == 1 and first.pause_reading
    more = client(s, large[70_000:])  # read although paused
    assert more.close is None and more.to_upstream == []
    back = upstream(s, metadata_response(1, [(1, "b1", 9092)]))
    assert back.close is not None and back.close.reason == "frame_not_gathered"
    assert back.to_upstream == []
