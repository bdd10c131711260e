"""The generated entity-field table: what kproxy finds a message naming equals what kio
(an independent codec, whose types tell a topic name, a group id and a transactional id
from other strings) says it names, for every API and version both know."""

from __future__ import annotations

import datetime
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproxy.protocol.apis import APIS
from kproxy.protocol.entities import (
    GROUP,
    TOPIC,
    TRANSACTIONAL_ID,
    errors_by_resource,
    named_entities,
    read_message,
)
from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.generated.entities import ENTITY_FIELDS
from kproxy.protocol.headers import parse_request_header
from kproxy.protocol.layout_codec import layout_for
from tests.kio_entities import kio_fields, kio_named
from tests.kio_strategies import message_strategy
from tests.kio_support import (
    encode_body,
    encode_request_frame,
    kio_message_class,
    kio_versions,
)


def _pairs(kind: str) -> list[tuple[int, int]]:
    return [
        (key, version)
        for key in sorted(APIS)
        for version in kio_versions(key, kind)  # type: ignore[arg-type]
        if version in APIS[key].versions
    ]


REQUESTS = _pairs("request")
RESPONSES = _pairs("response")


def test_the_table_covers_the_apis_that_name_entities() -> None:
    """Spot checks of the generated table, and its reach."""
    assert ENTITY_FIELDS[(19, True, 7)] == ((("Topics", "Name"), TOPIC),)
    assert ENTITY_FIELDS[(42, True, 2)] == ((("GroupsNames",), GROUP),)
    assert (("TransactionalId",), TRANSACTIONAL_ID) in ENTITY_FIELDS[(0, True, 3)]
    assert (0, True, 2) in ENTITY_FIELDS and ENTITY_FIELDS[(0, True, 13)] == (
        (("TransactionalId",), TRANSACTIONAL_ID),
    )  # Produce v13 names topics by id (KIP-516)
    requests = {key for key, is_request, _ in ENTITY_FIELDS if is_request}
    assert len(requests) >= 50


@pytest.mark.parametrize(("api_key", "version"), REQUESTS)
@settings(max_examples=6, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data())
def test_a_request_names_what_kio_says_it_names(api_key: int, version: int, data: Any) -> None:
    cls = kio_message_class(api_key, version, "request")
    assert cls is not None
    message = data.draw(message_strategy(cls))
    frame = memoryview(encode_request_frame(message, 9, "entities"))[4:]
    hdr = parse_request_header(frame)
    read = read_message(api_key, True, version, frame, hdr.body_offset)
    assert read is not None
    found = named_entities(api_key, True, version, read[1])
    assert Counter(found) == Counter(kio_named(message))


@pytest.mark.parametrize(("api_key", "version"), RESPONSES)
@settings(max_examples=4, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data())
def test_a_response_names_what_kio_says_it_names(api_key: int, version: int, data: Any) -> None:
    cls = kio_message_class(api_key, version, "response")
    assert cls is not None
    message = data.draw(message_strategy(cls))
    body = memoryview(encode_body(message))
    read = read_message(api_key, False, version, body, 0)
    assert read is not None
    layout, value = read
    assert Counter(named_entities(api_key, False, version, value)) == Counter(kio_named(message))
    # Every error code is found, each once.
    codes = [code for _resource, code in errors_by_resource(layout, value)]
    assert Counter(codes) == Counter(_kio_error_codes(message))


def _kio_error_codes(value: Any) -> list[int]:
    return [
        int(item)
        for field, item in kio_fields(value)
        if field.name == "error_code" and field.metadata.get("kafka_type") == "error_code"
    ]


def test_an_error_belongs_to_the_topic_its_struct_names() -> None:
    from kio.schema.create_topics.v7.response import CreateTopicsResponse
    from kio.schema.errors import ErrorCode

    from tests.kio_build import topic_result

    message = CreateTopicsResponse(
        throttle_time=datetime.timedelta(0),
        topics=(
            topic_result("a", ErrorCode.none),
            topic_result("b", ErrorCode.topic_already_exists),
        ),
    )
    read = read_message(19, False, 7, memoryview(encode_body(message)), 0)
    assert read is not None
    assert errors_by_resource(*read) == [((TOPIC, "a"), 0), ((TOPIC, "b"), 36)]


def test_a_truncated_message_is_malformed() -> None:
    layout = layout_for(20, True, 5)
    assert layout is not None
    with pytest.raises(MalformedMessage):
        read_message(20, True, 5, memoryview(b"\x00\x00\x00\x09ab"), 0)
