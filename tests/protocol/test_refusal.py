"""Refusals: the response a broker sends to an unauthorized request, for every API.

kio (an independent codec) writes the requests and reads kproxy's answers: a refusal
that does not parse as that API's response, or that names the wrong entities or error,
fails here.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.alter_configs.v2.request import AlterConfigsRequest, AlterConfigsResource
from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.delete_records.v2.request import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from kio.schema.delete_topics.v5.request import DeleteTopicsRequest as DeleteTopicsV5
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest as DeleteTopicsV6
from kio.schema.delete_topics.v6.request import DeleteTopicState

from kproxy.protocol.apis import APIS
from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.headers import parse_request_header
from kproxy.protocol.refusal import can_refuse, refusal_response, refusal_text
from tests.kio_strategies import message_strategy
from tests.kio_support import (
    decode_response_frame,
    encode_request_frame,
    kio_message_class,
    kio_versions,
)

TOPIC, GROUP, CLUSTER = 29, 30, 31
SECOND = datetime.timedelta(seconds=1)


def refuse(msg: Any, budget: int = 1 << 20) -> Any:
    """kproxy's refusal of a kio request, read back by kio."""
    frame = memoryview(encode_request_frame(msg, 77, "refusal-test"))[4:]
    hdr = parse_request_header(frame)
    cls = type(msg)
    text = refusal_text(cls.__api_key__, "gateway")
    answer = refusal_response(
        cls.__api_key__, cls.__version__, 77, frame, hdr.body_offset, text, budget
    )
    assert answer is not None
    response_cls = kio_message_class(cls.__api_key__, cls.__version__, "response")
    correlation_id, response = decode_response_frame(response_cls, answer)
    assert correlation_id == 77
    return response


def test_create_topics_echoes_each_topic_with_topic_authorization_failed() -> None:
    request = CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name="orders", num_partitions=3, replication_factor=1, assignments=(), configs=()
            ),
            CreatableTopic(
                name="audit", num_partitions=1, replication_factor=1, assignments=(), configs=()
            ),
        ),
        timeout=datetime.timedelta(seconds=60),
        validate_only=False,
    )
    response = refuse(request)
    assert [t.name for t in response.topics] == ["orders", "audit"]
    assert {int(t.error_code) for t in response.topics} == {TOPIC}
    assert response.topics[0].error_message == (
        "CreateTopics is not allowed on kproxy listener 'gateway'"
    )
    # What a broker leaves at its defaults in an error answer.
    assert response.topics[0].num_partitions == -1
    assert response.topics[0].replication_factor == -1


def test_delete_topics_by_name_and_by_id() -> None:
    v5 = refuse(DeleteTopicsV5(topic_names=("a", "b"), timeout=SECOND))
    assert [(r.name, int(r.error_code)) for r in v5.responses] == [("a", TOPIC), ("b", TOPIC)]
    topic_id = uuid.uuid4()
    v6 = refuse(
        DeleteTopicsV6(topics=(DeleteTopicState(name=None, topic_id=topic_id),), timeout=SECOND)
    )
    assert [(r.name, r.topic_id, int(r.error_code)) for r in v6.responses] == [
        (None, topic_id, TOPIC)
    ]


def test_delete_records_echoes_partitions() -> None:
    request = DeleteRecordsRequest(
        topics=(
            DeleteRecordsTopic(
                name="orders",
                partitions=(
                    DeleteRecordsPartition(partition_index=0, offset=10),
                    DeleteRecordsPartition(partition_index=2, offset=20),
                ),
            ),
        ),
        timeout=SECOND,
    )
    response = refuse(request)
    (topic,) = response.topics
    assert topic.name == "orders"
    assert [(p.partition_index, int(p.error_code)) for p in topic.partitions] == [
        (0, TOPIC),
        (2, TOPIC),
    ]


def test_alter_configs_error_follows_the_resource_type() -> None:
    request = AlterConfigsRequest(
        resources=(
            AlterConfigsResource(resource_type=2, resource_name="orders", configs=()),
            AlterConfigsResource(resource_type=4, resource_name="1", configs=()),
        ),
        validate_only=False,
    )
    response = refuse(request)
    assert [(r.resource_type, r.resource_name, int(r.error_code)) for r in response.responses] == [
        (2, "orders", TOPIC),
        (4, "1", CLUSTER),
    ]


def test_create_acls_is_a_cluster_authorization_failure() -> None:
    creation = AclCreation(
        resource_type=2,
        resource_name="orders",
        resource_pattern_type=3,
        principal="User:eve",
        host="*",
        operation=2,
        permission_type=3,
    )
    response = refuse(CreateAclsRequest(creations=(creation, creation)))
    assert [int(r.error_code) for r in response.results] == [CLUSTER, CLUSTER]


def _kio_pairs() -> list[tuple[int, int]]:
    pairs = []
    for key in sorted(APIS):
        for version in kio_versions(key, "request"):
            if (
                version in kio_versions(key, "response")
                and version in APIS[key].versions
                and can_refuse(key, version)
            ):
                pairs.append((key, version))
    return pairs


PAIRS = _kio_pairs()


def test_every_version_of_every_api_can_say_refused() -> None:
    """Every response kproxy knows has an error code to carry the refusal (so no API
    needs its connection closed instead), and kio checks most of them below."""
    assert all(can_refuse(key, v) for key, info in APIS.items() for v in info.versions)
    assert len(PAIRS) > 280


@pytest.mark.parametrize(("api_key", "version"), PAIRS)
@settings(max_examples=8, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data())
def test_every_refusal_is_the_apis_own_response(api_key: int, version: int, data: Any) -> None:
    """Any valid request of any API: the refusal parses whole as that API's response
    (kio reads it to the last byte), with an authorization error wherever it has one."""
    cls = kio_message_class(api_key, version, "request")
    assert cls is not None
    request = data.draw(message_strategy(cls))
    response = refuse(request, budget=1 << 24)
    top = getattr(response, "error_code", None)
    if top is not None:
        assert int(top) in (TOPIC, GROUP, CLUSTER, 53)


def test_a_truncated_request_is_malformed() -> None:
    msg = DeleteTopicsV5(topic_names=("a", "b"), timeout=SECOND)
    frame = memoryview(encode_request_frame(msg, 1, "c")[:-6])[4:]
    hdr = parse_request_header(frame)
    with pytest.raises(MalformedMessage):
        refusal_response(20, 5, 1, frame, hdr.body_offset, "no", 1 << 20)


def test_an_answer_beyond_its_budget_is_not_written() -> None:
    msg = DeleteTopicsV5(topic_names=tuple(f"t{i}" for i in range(1000)), timeout=SECOND)
    frame = memoryview(encode_request_frame(msg, 1, "c"))[4:]
    hdr = parse_request_header(frame)
    assert refusal_response(20, 5, 1, frame, hdr.body_offset, "no", 4096) is None
