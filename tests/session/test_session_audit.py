"""Session playbooks for the audit trail (`kproxy.session.audit`): a request that
changes the cluster is recorded with what it names and its response's outcome; a
member's own commit and plain traffic are not; a refusal is recorded with what it named;
a change whose body does not parse closes the connection before anything is forwarded.
kio (an independent codec) writes every message."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.create_topics.v7.response import CreateTopicsResponse
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.delete_topics.v6.response import DeletableTopicResult, DeleteTopicsResponse
from kio.schema.errors import ErrorCode
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.schema.incremental_alter_configs.v1.response import (
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_commit.v9.response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

from kproxy.session import ProxySession, SessionLimits, audit
from kproxy.session.admission import CLIENT_REFUSED_APIS
from kproxy.session.audit import AuditRecord
from kproxy.session.policy import ApiPolicy
from tests.kio_build import topic_result
from tests.kio_support import encode_request_frame, encode_response_frame
from tests.session.frames import address_map, client, upstream

ZERO = datetime.timedelta(0)
TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def audit_session(denied: frozenset[int] = frozenset(), lane: bool = True) -> ProxySession:
    policy = ApiPolicy("gateway", denied)
    limits = SessionLimits(1 << 20, 100)
    return ProxySession(
        address_map(open_nodes=(1,)), limits, CLIENT_REFUSED_APIS, policy, fast_lane=lane
    )


def record_of(record: AuditRecord) -> tuple[object, ...]:
    return (
        record.action,
        record.api,
        record.version,
        record.client_id,
        record.resources,
        record.outcome,
        record.failed,
        record.errors,
    )


def round_trip(s: ProxySession, request: object, response: object) -> list[AuditRecord]:
    step = client(s, encode_request_frame(request, 5, "ops"))
    assert step.close is None and step.to_upstream
    answered = upstream(s, encode_response_frame(response, 5))
    assert answered.close is None and answered.to_client
    return [] if answered.more is None else answered.more.audits


def new_topic(name: str) -> CreatableTopic:
    return CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=(), configs=()
    )


def create_topics(*names: str) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=tuple(new_topic(n) for n in names), timeout=ZERO, validate_only=False
    )


def test_a_change_is_recorded_with_each_resources_outcome() -> None:
    for lane in (True, False):
        s = audit_session(lane=lane)
        response = CreateTopicsResponse(
            throttle_time=ZERO,
            topics=(
                topic_result("orders", ErrorCode.none),
                topic_result("audit", ErrorCode.topic_already_exists),
            ),
        )
        records = round_trip(s, create_topics("orders", "audit"), response)
        assert [record_of(r) for r in records] == [
            (
                "change",
                "CreateTopics",
                7,
                "ops",
                ["topic:orders", "topic:audit"],
                "partial",
                ["topic:audit"],
                [36],
            )
        ]


def test_a_topic_deleted_by_id_is_named_by_the_response() -> None:
    s = audit_session()
    request = DeleteTopicsRequest(
        topics=(DeleteTopicState(name=None, topic_id=TOPIC_ID),), timeout=ZERO
    )
    response = DeleteTopicsResponse(
        throttle_time=ZERO,
        responses=(
            DeletableTopicResult(
                name="orders", topic_id=TOPIC_ID, error_code=ErrorCode.none, error_message=None
            ),
        ),
    )
    (record,) = round_trip(s, request, response)
    assert (record.resources, record.outcome) == (["topic:orders"], "success")


def test_configs_are_named_by_resource_type() -> None:
    s = audit_session()
    request = IncrementalAlterConfigsRequest(
        resources=(
            AlterConfigsResource(
                resource_type=2,
                resource_name="orders",
                configs=(AlterableConfig(name="retention.ms", config_operation=0, value="1000"),),
            ),
            AlterConfigsResource(resource_type=4, resource_name="1", configs=()),
        ),
        validate_only=False,
    )
    response = IncrementalAlterConfigsResponse(
        throttle_time=ZERO,
        responses=(
            AlterConfigsResourceResponse(
                error_code=ErrorCode.none,
                error_message=None,
                resource_type=2,
                resource_name="orders",
            ),
            AlterConfigsResourceResponse(
                error_code=ErrorCode.cluster_authorization_failed,
                error_message=None,
                resource_type=4,
                resource_name="1",
            ),
        ),
    )
    (record,) = round_trip(s, request, response)
    assert record_of(record)[4:] == (
        ["topic:orders", "broker:1"],
        "partial",
        ["broker:1"],
        [31],
    )


def commit(generation: int, member: str) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id="billing",
        generation_id_or_member_epoch=generation,
        member_id=member,
        group_instance_id=None,
        topics=(
            OffsetCommitRequestTopic(
                name="orders",
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=0,
                        committed_offset=42,
                        committed_leader_epoch=-1,
                        committed_metadata=None,
                    ),
                ),
            ),
        ),
    )


def committed(code: ErrorCode) -> OffsetCommitResponse:
    partition = OffsetCommitResponsePartition(partition_index=0, error_code=code)
    return OffsetCommitResponse(
        throttle_time=ZERO,
        topics=(OffsetCommitResponseTopic(name="orders", partitions=(partition,)),),
    )


def test_an_offset_reset_is_a_change_and_a_members_commit_is_not() -> None:
    s = audit_session()
    assert round_trip(s, commit(7, "member-1"), committed(ErrorCode.none)) == []
    (record,) = round_trip(s, commit(-1, ""), committed(ErrorCode.none))
    assert record_of(record)[4:] == (["group:billing", "topic:orders"], "success", [], [])


def test_a_refusal_is_recorded_with_what_it_named() -> None:
    s = audit_session(denied=frozenset((19,)))
    step = client(s, encode_request_frame(create_topics("orders"), 5, "ops"))
    assert step.to_upstream == [] and step.to_client
    assert [record_of(r) for r in step.refused] == [
        ("refuse", "CreateTopics", 7, "ops", ["topic:orders"], "refused", [], [])
    ]


def test_a_change_too_malformed_to_read_is_never_forwarded() -> None:
    s = audit_session()
    frame = bytearray(encode_request_frame(create_topics("orders"), 5, "ops"))
    # The topic array's count (compact: n + 1) says 100 topics follow.
    frame[frame.index(b"orders") - 2] = 101
    step = client(s, bytes(frame))
    assert step.to_upstream == []
    assert step.close is not None and step.close.reason == "malformed"


@pytest.mark.parametrize("limit", ["READ_LIMIT", "ELEMENT_LIMIT"])
def test_a_change_past_the_read_limits_is_refused_unread(
    limit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its bytes or its array elements in all, a change is never read whole."""
    monkeypatch.setattr(audit, limit, 64 if limit == "READ_LIMIT" else 10)
    s = audit_session()
    request = create_topics(*(f"t{i}" for i in range(20)))
    step = client(s, encode_request_frame(request, 5, "ops"))
    assert step.to_upstream == []
    assert step.close is not None and step.close.reason == "audit_too_large"
    assert (
        round_trip(
            audit_session(),
            create_topics("t0"),
            CreateTopicsResponse(throttle_time=ZERO, topics=(topic_result("t0", ErrorCode.none),)),
        )[0].outcome
        == "success"
    )  # a request within the limits is read
