"""Session playbooks for a listener's authorization rules (kproxy.session.authorize and
response_edit): requests built and answers decoded by kio, the broker's side played by
kio-encoded responses. A request naming only refused entities is answered by kproxy;
one naming allowed and refused entities goes on without the refused ones, and their
errors are merged into its answer; listings leave out what the caller
may not describe; topic ids resolve through the Metadata seen; a reload changes the
rules of an established session."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kproxy.config.authorization import AuthorizationSettings
from kproxy.session import ProxySession, SessionLimits
from kproxy.session.admission import CLIENT_REFUSED_APIS
from kproxy.session.authorization import Authorizer
from kproxy.session.policy import ApiPolicy
from tests.kio_support import (
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
)
from tests.session.frames import address_map, client, joined, upstream
from tests.session.produce_frames import fetch_by_id, produce_errors, produce_to, produced_by

ZERO = datetime.timedelta(0)
RULES: dict[str, Any] = {
    "rules": [
        {"effect": "deny", "principals": ["User:ANONYMOUS"], "topics": ["orders-secret"]},
        {"effect": "allow", "topics": ["orders-*"]},
        {"effect": "allow", "groups": ["app-*"], "operations": ["read"]},
        {"effect": "allow", "client_ids": ["ops"], "groups": ["*"]},
    ]
}


def authorizer(rules: dict[str, Any]) -> Authorizer:
    return Authorizer.from_settings(AuthorizationSettings.model_validate(rules))


def ruled_session(rules: dict[str, Any] = RULES) -> tuple[ProxySession, ApiPolicy]:
    policy = ApiPolicy("gateway", authorizer=authorizer(rules))
    mapping = address_map(open_nodes=(1,))
    session = ProxySession(mapping, SessionLimits(1 << 20, 100), CLIENT_REFUSED_APIS, policy)
    return session, policy


def test_a_split_produce_goes_on_allowed_and_merges_the_refused_errors() -> None:
    s, _ = ruled_session()
    step = client(s, produce_to(5, "orders-a", "payments", "orders-b"))
    assert step.to_client == []
    _key, _version, corr, _client_id, forwarded = decode_request_frame(joined(step.to_upstream))
    assert corr == 5 and [t.name for t in forwarded.topic_data] == ["orders-a", "orders-b"]
    assert [r.resources for r in step.refused] == [["topic:payments"]]
    back = joined(upstream(s, produced_by(5, "orders-a", "orders-b")).to_client)
    # The refused topic's error after the broker's answers, where a broker puts it.
    assert produce_errors(back) == [("orders-a", 0), ("orders-b", 0), ("payments", 29)]


def test_a_request_naming_only_refused_topics_is_answered_by_kproxy() -> None:
    s, _ = ruled_session()
    step = client(s, produce_to(6, "payments", "orders-secret"))
    assert step.to_upstream == [] and not s.inflight
    assert produce_errors(joined(step.to_client)) == [("payments", 29), ("orders-secret", 29)]


def test_a_refused_group_refuses_every_partition_of_an_offset_commit() -> None:
    from kio.schema.offset_commit.v8 import request as commit
    from kio.schema.offset_commit.v8 import response as committed

    msg = commit.OffsetCommitRequest(
        group_id="billing",
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=(
            commit.OffsetCommitRequestTopic(
                name="orders-a",
                partitions=(
                    commit.OffsetCommitRequestPartition(
                        partition_index=0,
                        committed_offset=1,
                        committed_leader_epoch=-1,
                        committed_metadata=None,
                    ),
                ),
            ),
        ),
    )
    s, _ = ruled_session()
    step = client(s, encode_request_frame(msg, 7, "app"))
    assert step.to_upstream == []
    _, answer = decode_response_frame(committed.OffsetCommitResponse, joined(step.to_client))
    assert [p.error_code for t in answer.topics for p in t.partitions] == [
        ErrorCode.group_authorization_failed
    ]
    assert [r.resources for r in step.refused] == [["group:billing"]]


def test_metadata_for_all_topics_leaves_out_what_the_caller_may_not_describe() -> None:
    from kio.schema.metadata.v12 import request as meta
    from kio.schema.metadata.v12 import response as answered

    request = meta.MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    s, policy = ruled_session()
    step = client(s, encode_request_frame(request, 8, "app"))
    assert step.to_upstream  # it goes on as it came

    def topic(name: str, topic_id: uuid.UUID) -> Any:
        return answered.MetadataResponseTopic(
            error_code=ErrorCode.none,
            name=name,
            topic_id=topic_id,
            is_internal=False,
            partitions=(),
        )

    ids = {name: uuid.uuid4() for name in ("orders-a", "payments", "orders-secret")}
    response = answered.MetadataResponse(
        throttle_time=ZERO,
        brokers=(answered.MetadataResponseBroker(node_id=1, host="b1.internal", port=9092),),
        cluster_id="c",
        controller_id=1,
        topics=tuple(topic(name, topic_id) for name, topic_id in ids.items()),
    )
    back = joined(upstream(s, encode_response_frame(response, 8)).to_client)
    _, seen = decode_response_frame(answered.MetadataResponse, back)
    assert [t.name for t in seen.topics] == ["orders-a"]
    assert [b.host for b in seen.brokers] != ["b1.internal"]  # rewritten as ever
    # Every topic id the broker named is learned, described or not.
    assert policy.topic_names.name_of(ids["payments"].bytes) == "payments"


def test_a_fetch_by_topic_id_is_checked_by_the_name_metadata_gave_it() -> None:
    from kio.schema.fetch.v13 import response as fetched

    s, policy = ruled_session()
    allowed, refused, unknown = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    policy.topic_names.learn(allowed.bytes, "orders-a")
    policy.topic_names.learn(refused.bytes, "payments")
    step = client(s, fetch_by_id(9, allowed, refused, unknown))
    _, _, _, _, forwarded = decode_request_frame(joined(step.to_upstream))
    assert [t.topic_id for t in forwarded.topics] == [allowed]
    assert [r.resources for r in step.refused] == [["topic:payments", "topic:(unknown topic id)"]]
    partition = fetched.PartitionData(
        partition_index=0,
        error_code=ErrorCode.none,
        high_watermark=0,
        last_stable_offset=0,
        log_start_offset=0,
        aborted_transactions=(),
        preferred_read_replica=-1,
        records=None,
    )
    response = fetched.FetchResponse(
        throttle_time=ZERO,
        error_code=ErrorCode.none,
        session_id=0,
        responses=(fetched.FetchableTopicResponse(topic_id=allowed, partitions=(partition,)),),
    )
    back = joined(upstream(s, encode_response_frame(response, 9)).to_client)
    _, seen = decode_response_frame(fetched.FetchResponse, back)
    assert [(t.topic_id, t.partitions[0].error_code.value) for t in seen.responses] == [
        (allowed, 0),
        (refused, 29),
        (unknown, 29),
    ]


def test_list_groups_leaves_out_groups_the_caller_may_not_describe() -> None:
    from kio.schema.list_groups.v4 import request as listing
    from kio.schema.list_groups.v4 import response as listed

    s, _ = ruled_session()
    step = client(s, encode_request_frame(listing.ListGroupsRequest(states_filter=()), 3, "app"))
    assert step.to_upstream
    groups = tuple(
        listed.ListedGroup(group_id=g, protocol_type="consumer", group_state="Stable")
        for g in ("app-1", "billing", "app-2")
    )
    response = listed.ListGroupsResponse(
        throttle_time=ZERO, error_code=ErrorCode.none, groups=groups
    )
    back = joined(upstream(s, encode_response_frame(response, 3)).to_client)
    _, seen = decode_response_frame(listed.ListGroupsResponse, back)
    assert [g.group_id for g in seen.groups] == ["app-1", "app-2"]


def test_a_reload_changes_the_rules_of_an_established_session() -> None:
    s, policy = ruled_session()
    assert client(s, produce_to(1, "payments")).to_upstream == []
    policy.update("gateway", frozenset(), False, authorizer({"rules": [], "default": "allow"}))
    step = client(s, produce_to(2, "payments"))
    assert step.to_client == [] and step.to_upstream and step.refused == []


def test_a_rule_refusing_an_api_whole_answers_it() -> None:
    s, _ = ruled_session({"rules": [{"effect": "deny", "apis": ["Produce"]}], "default": "allow"})
    step = client(s, produce_to(4, "orders-a"))
    assert step.to_upstream == []
    assert produce_errors(joined(step.to_client)) == [("orders-a", 29)]
    assert [r.resources for r in step.refused] == [["api:Produce"]]


def test_a_request_too_malformed_to_check_closes_its_connection() -> None:
    s, _ = ruled_session()
    frame = bytearray(produce_to(4, "orders-a"))
    frame[-12:] = b"\xff" * 12  # the partition array's count and beyond: a lie
    step = client(s, bytes(frame))
    assert step.to_upstream == [] and step.close is not None
    assert step.close.side == "client"


@pytest.mark.parametrize(
    ("rule", "where"),
    [
        ({"effect": "allow", "apis": ["Produces"]}, "Produces"),
        ({"effect": "allow", "topics": ["orders-[a"]}, "orders-[a"),
        ({"effect": "allow", "topics": ["t"], "addresses": ["10.0.0.0/33"]}, "10.0.0.0/33"),
        ({"effect": "allow", "topics": ["t"], "operations": ["reed"]}, "reed"),
    ],
)
def test_a_bad_rule_fails_at_load_naming_its_value(rule: dict[str, Any], where: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as failed:
        AuthorizationSettings.model_validate({"rules": [rule]})
    assert where in str(failed.value)


def test_find_coordinator_keys_are_checked_by_their_key_type() -> None:
    """FindCoordinator's keys carry no entity annotation: KeyType 0 names groups."""
    from kio.schema.find_coordinator.v4 import request as find
    from kio.schema.find_coordinator.v4 import response as found

    s, _ = ruled_session()
    request = find.FindCoordinatorRequest(key_type=0, coordinator_keys=("billing", "app-1"))
    step = client(s, encode_request_frame(request, 11, "app"))
    _, _, _, _, forwarded = decode_request_frame(joined(step.to_upstream))
    assert list(forwarded.coordinator_keys) == ["app-1"]
    answer = found.FindCoordinatorResponse(
        throttle_time=ZERO,
        coordinators=(
            found.Coordinator(
                key="app-1",
                node_id=1,
                host="b1.internal",
                port=9092,
                error_code=ErrorCode.none,
                error_message=None,
            ),
        ),
    )
    back = joined(upstream(s, encode_response_frame(answer, 11)).to_client)
    _, seen = decode_response_frame(found.FindCoordinatorResponse, back)
    assert [(c.key, c.error_code) for c in seen.coordinators] == [
        ("app-1", ErrorCode.none),
        ("billing", ErrorCode.group_authorization_failed),
    ]


def test_metadata_naming_only_refused_topics_still_goes_on_for_its_brokers() -> None:
    from kio.schema.metadata.v12 import request as meta
    from kio.schema.metadata.v12 import response as answered

    request = meta.MetadataRequest(
        topics=(meta.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name="payments"),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    s, _ = ruled_session()
    step = client(s, encode_request_frame(request, 12, "app"))
    _, _, _, _, forwarded = decode_request_frame(joined(step.to_upstream))
    assert forwarded.topics == ()
    response = answered.MetadataResponse(
        throttle_time=ZERO,
        brokers=(answered.MetadataResponseBroker(node_id=1, host="b1.internal", port=9092),),
        cluster_id="c",
        controller_id=1,
        topics=(),
    )
    back = joined(upstream(s, encode_response_frame(response, 12)).to_client)
    _, seen = decode_response_frame(answered.MetadataResponse, back)
    assert [(t.name, t.error_code) for t in seen.topics] == [
        ("payments", ErrorCode.topic_authorization_failed)
    ]
    assert len(seen.brokers) == 1


def test_an_acks_0_produce_naming_a_refused_topic_closes_its_connection() -> None:
    """No response can carry the error: a broker closes the connection then too."""
    s, _ = ruled_session()
    frame = bytearray(produce_to(4, "orders-a", "payments"))
    # acks (int16) follows the null transactional id (one byte, flexible) after the
    # header: set it to 0 in place.
    at = frame.index(b"\x00\x01\x00\x00\x03\xe8")
    frame[at : at + 2] = b"\x00\x00"
    step = client(s, bytes(frame))
    assert step.to_upstream == [] and step.to_client == []
    assert step.close is not None and step.close.reason == "api_denied"


def test_a_refused_topic_inside_an_allowed_group_is_split_out_below_it() -> None:
    """OffsetFetch v8: the group may be read, one of its topics may not. The group goes
    on without that topic, and the topic's error joins the broker's answer for the
    group."""
    from kio.schema.offset_fetch.v8 import request as fetch
    from kio.schema.offset_fetch.v8 import response as fetched

    request = fetch.OffsetFetchRequest(
        groups=(
            fetch.OffsetFetchRequestGroup(
                group_id="app-1",
                topics=tuple(
                    fetch.OffsetFetchRequestTopics(name=t, partition_indexes=(0,))
                    for t in ("orders-a", "payments")
                ),
            ),
        ),
        require_stable=False,
    )
    s, _ = ruled_session()
    step = client(s, encode_request_frame(request, 13, "app"))
    _, _, _, _, forwarded = decode_request_frame(joined(step.to_upstream))
    assert [(g.group_id, [t.name for t in g.topics]) for g in forwarded.groups] == [
        ("app-1", ["orders-a"])
    ]
    assert [r.resources for r in step.refused] == [["topic:payments"]]
    partition = fetched.OffsetFetchResponsePartitions(
        partition_index=0,
        committed_offset=42,
        committed_leader_epoch=-1,
        metadata=None,
        error_code=ErrorCode.none,
    )
    answer = fetched.OffsetFetchResponse(
        throttle_time=ZERO,
        groups=(
            fetched.OffsetFetchResponseGroup(
                group_id="app-1",
                topics=(
                    fetched.OffsetFetchResponseTopics(name="orders-a", partitions=(partition,)),
                ),
                error_code=ErrorCode.none,
            ),
        ),
    )
    back = joined(upstream(s, encode_response_frame(answer, 13)).to_client)
    _, seen = decode_response_frame(fetched.OffsetFetchResponse, back)
    assert [(g.group_id, g.error_code) for g in seen.groups] == [("app-1", ErrorCode.none)]
    assert [
        (t.name, p.partition_index, p.error_code)
        for t in seen.groups[0].topics
        for p in t.partitions
    ] == [
        ("orders-a", 0, ErrorCode.none),
        ("payments", 0, ErrorCode.topic_authorization_failed),
    ]


def test_a_refused_subscription_topic_refuses_the_whole_heartbeat() -> None:
    """Nothing in a ConsumerGroupHeartbeat's answer can carry one topic's error: the
    request is answered whole rather than quietly subscribing to less."""
    from kio.schema.consumer_group_heartbeat.v0 import request as beat

    request = beat.ConsumerGroupHeartbeatRequest(
        group_id="app-1",
        member_id="m",
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout=datetime.timedelta(seconds=30),
        subscribed_topic_names=("orders-a", "payments"),
        server_assignor=None,
        topic_partitions=(),
    )
    s, _ = ruled_session()
    step = client(s, encode_request_frame(request, 14, "app"))
    assert step.to_upstream == [] and step.to_client
    assert [r.resources for r in step.refused] == [["topic:payments"]]
