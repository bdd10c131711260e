"""Session playbooks for a listener's tenants (kproxy.session.tenancy): requests built
and answers decoded by kio, the broker's side played by kio-encoded responses. A
tenant's names are prefixed on the way in and unprefixed on the way out; another
tenant's topics, groups and the cluster's internal topics are never seen, and never
reached, not by a topic id either; names the prefix makes too long, the cluster's own
APIs and config resources are refused with the errors a broker sends; a connection no
tenant matches reaches nothing; a reload moves a session to its new tenant."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kproxy.config.authorization import AuthorizationSettings
from kproxy.config.tenancy import TenancySettings
from kproxy.session import ProxySession, SessionLimits
from kproxy.session.admission import CLIENT_REFUSED_APIS
from kproxy.session.authorization import Authorizer
from kproxy.session.policy import ApiPolicy
from kproxy.session.tenancy import Tenancy
from tests.kio_support import decode_request_frame, decode_response_frame, encode_request_frame
from tests.kio_support import encode_response_frame as response_frame
from tests.session.frames import address_map, client, joined, upstream
from tests.session.produce_frames import (
    fetch_by_id,
    produce_errors,
    produce_to,
    produced_by,
)

ZERO = datetime.timedelta(0)
TENANTS: dict[str, Any] = {
    "tenants": [
        {"name": "team-a", "principals": ["User:alice"], "prefix": "a."},
        {"name": "team-b", "server_names": ["b.kafka.example"], "prefix": "b."},
        {"name": "team-c", "addresses": ["10.3.0.0/16"]},
    ]
}


def tenancy(settings: dict[str, Any] = TENANTS) -> Tenancy:
    return Tenancy.from_settings(TenancySettings.model_validate(settings))


def tenant_session(
    principal: str = "User:alice",
    host: str = "127.0.0.1",
    server_name: str | None = None,
    settings: dict[str, Any] = TENANTS,
    rules: dict[str, Any] | None = None,
) -> tuple[ProxySession, ApiPolicy]:
    authorizer = None
    if rules is not None:
        authorizer = Authorizer.from_settings(AuthorizationSettings.model_validate(rules))
    policy = ApiPolicy("shared", authorizer=authorizer, tenancy=tenancy(settings))
    mapping = address_map(open_nodes=(1,))
    session = ProxySession(mapping, SessionLimits(1 << 20, 100), CLIENT_REFUSED_APIS, policy)
    session.client_host, session.server_name = host, server_name
    if principal != "User:ANONYMOUS":
        from kproxy.session.identity import Identity

        session.identity = Identity("sub")
        session.identity.principal = principal
    return session, policy


def forwarded_topics(step: Any) -> list[str]:
    _, _, _, _, message = decode_request_frame(joined(step.to_upstream))
    return [t.name for t in message.topic_data]


def test_a_tenant_produces_under_its_prefix_and_sees_its_own_names() -> None:
    s, _ = tenant_session()
    step = client(s, produce_to(5, "orders", "payments"))
    assert forwarded_topics(step) == ["a.orders", "a.payments"]
    back = joined(upstream(s, produced_by(5, "a.orders", "a.payments")).to_client)
    assert produce_errors(back) == [("orders", 0), ("payments", 0)]


@pytest.mark.parametrize(
    ("principal", "host", "server_name", "prefix"),
    [
        ("User:alice", "10.3.1.1", None, "a."),  # the first match decides
        ("User:bob", "127.0.0.1", "B.kafka.example", "b."),  # by the server name (SNI)
        ("User:bob", "10.3.1.1", "other.example", "team-c."),  # by address; default prefix
    ],
)
def test_a_connection_belongs_to_the_first_tenant_that_matches_it(
    principal: str, host: str, server_name: str | None, prefix: str
) -> None:
    s, _ = tenant_session(principal, host, server_name)
    assert forwarded_topics(client(s, produce_to(2, "orders"))) == [prefix + "orders"]


def test_a_connection_no_tenant_matches_reaches_nothing() -> None:
    s, _ = tenant_session("User:mallory")
    step = client(s, produce_to(6, "a.orders"))
    assert step.to_upstream == []
    assert produce_errors(joined(step.to_client)) == [("a.orders", 29)]


def test_a_connection_no_tenant_matches_may_see_the_cluster_when_told() -> None:
    s, _ = tenant_session("User:ops", settings={**TENANTS, "unassigned": "cluster"})
    assert forwarded_topics(client(s, produce_to(6, "a.orders"))) == ["a.orders"]


def metadata_for(topics: list[str] | None, ids: dict[str, uuid.UUID]) -> tuple[bytes, bytes]:
    from kio.schema.metadata.v12 import request as meta
    from kio.schema.metadata.v12 import response as answered

    request = meta.MetadataRequest(
        topics=None
        if topics is None
        else tuple(meta.MetadataRequestTopic(None, t) for t in topics),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )

    def topic(name: str) -> Any:
        return answered.MetadataResponseTopic(
            error_code=ErrorCode.none,
            name=name,
            topic_id=ids[name],
            is_internal=False,
            partitions=(),
        )

    response = answered.MetadataResponse(
        throttle_time=ZERO,
        brokers=(answered.MetadataResponseBroker(node_id=1, host="b1.internal", port=9092),),
        cluster_id="c",
        controller_id=1,
        topics=tuple(topic(name) for name in ids),
    )
    return encode_request_frame(request, 8, "app"), response_frame(response, 8)


def test_metadata_for_all_topics_shows_a_tenant_only_its_own_unprefixed() -> None:
    from kio.schema.metadata.v12 import response as answered

    ids = {n: uuid.uuid4() for n in ("a.orders", "b.orders", "__consumer_offsets", "a.x")}
    request, response = metadata_for(None, ids)
    s, policy = tenant_session()
    client(s, request)
    _, seen = decode_response_frame(
        answered.MetadataResponse, joined(upstream(s, response).to_client)
    )
    assert [t.name for t in seen.topics] == ["orders", "x"]
    assert policy.topic_names.name_of(ids["b.orders"].bytes) == "b.orders"


def test_another_tenants_topic_id_is_refused_as_a_broker_refuses_it() -> None:
    s, policy = tenant_session()
    mine, theirs = uuid.uuid4(), uuid.uuid4()
    policy.topic_names.learn(mine.bytes, "a.orders")
    policy.topic_names.learn(theirs.bytes, "b.orders")
    step = client(s, fetch_by_id(9, mine, theirs))
    _, _, _, _, forwarded = decode_request_frame(joined(step.to_upstream))
    assert [t.topic_id for t in forwarded.topics] == [mine]
    assert [r.resources for r in step.refused] == [["topic:b.orders"]]


def test_a_name_the_prefix_makes_too_long_is_an_invalid_topic() -> None:
    s, _ = tenant_session()
    step = client(s, produce_to(4, "x" * 248))
    assert step.to_upstream == []
    assert produce_errors(joined(step.to_client)) == [("x" * 248, 17)]


def test_the_clusters_own_apis_and_configs_are_refused_to_a_tenant() -> None:
    from kio.schema.describe_acls.v3 import request as acls
    from kio.schema.describe_acls.v3 import response as acls_answer
    from kio.schema.describe_configs.v4 import request as configs
    from kio.schema.describe_configs.v4 import response as configs_answer

    s, _ = tenant_session()
    describe = acls.DescribeAclsRequest(
        resource_type_filter=1,
        resource_name_filter=None,
        pattern_type_filter=1,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    step = client(s, encode_request_frame(describe, 3, "admin"))
    assert step.to_upstream == []
    _, acl_answer = decode_response_frame(acls_answer.DescribeAclsResponse, joined(step.to_client))
    assert acl_answer.error_code == ErrorCode.cluster_authorization_failed
    broker = configs.DescribeConfigsRequest(
        resources=(
            configs.DescribeConfigsResource(
                resource_type=4, resource_name="1", configuration_keys=None
            ),
        ),
        include_synonyms=False,
        include_documentation=False,
    )
    step = client(s, encode_request_frame(broker, 4, "admin"))
    assert step.to_upstream == []
    _, answer = decode_response_frame(
        configs_answer.DescribeConfigsResponse, joined(step.to_client)
    )
    assert [r.error_code for r in answer.results] == [ErrorCode.cluster_authorization_failed]


def test_a_topics_config_and_a_coordinator_key_are_renamed_both_ways() -> None:
    from kio.schema.describe_configs.v4 import request as configs
    from kio.schema.find_coordinator.v4 import request as find
    from kio.schema.find_coordinator.v4 import response as found

    s, _ = tenant_session()
    topic = configs.DescribeConfigsRequest(
        resources=(
            configs.DescribeConfigsResource(
                resource_type=2, resource_name="orders", configuration_keys=None
            ),
        ),
        include_synonyms=False,
        include_documentation=False,
    )
    _, _, _, _, forwarded = decode_request_frame(
        joined(client(s, encode_request_frame(topic, 5, "admin")).to_upstream)
    )
    assert [r.resource_name for r in forwarded.resources] == ["a.orders"]
    request = find.FindCoordinatorRequest(key_type=0, coordinator_keys=("billing",))
    _, _, _, _, forwarded = decode_request_frame(
        joined(client(s, encode_request_frame(request, 6, "app")).to_upstream)
    )
    assert forwarded.coordinator_keys == ("a.billing",)
    coordinator = found.Coordinator(
        key="a.billing",
        node_id=1,
        host="b1.internal",
        port=9092,
        error_code=ErrorCode.none,
        error_message=None,
    )
    answer = found.FindCoordinatorResponse(throttle_time=ZERO, coordinators=(coordinator,))
    # The DescribeConfigs answer is due first; FindCoordinator's waits behind it.
    from kio.schema.describe_configs.v4 import response as configs_answer

    result = configs_answer.DescribeConfigsResult(
        error_code=ErrorCode.none,
        error_message=None,
        resource_type=2,
        resource_name="a.orders",
        configs=(),
    )
    described = configs_answer.DescribeConfigsResponse(throttle_time=ZERO, results=(result,))
    back = upstream(s, response_frame(described, 5) + response_frame(answer, 6)).to_client
    frames = joined(back)
    first = 4 + int.from_bytes(frames[:4], "big")
    _, seen_configs = decode_response_frame(configs_answer.DescribeConfigsResponse, frames[:first])
    _, seen = decode_response_frame(found.FindCoordinatorResponse, frames[first:])
    assert [r.resource_name for r in seen_configs.results] == ["orders"]
    assert [c.key for c in seen.coordinators] == ["billing"]
    assert seen.coordinators[0].host != "b1.internal"  # rewritten as ever


def test_a_topic_regex_is_confined_to_the_tenant_and_read_back_as_sent() -> None:
    from kio.schema.consumer_group_heartbeat.v1 import request as beat

    s, _ = tenant_session()
    request = beat.ConsumerGroupHeartbeatRequest(
        group_id="billing",
        member_id="m",
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout=datetime.timedelta(seconds=30),
        subscribed_topic_names=None,
        subscribed_topic_regex="orders.*",
        server_assignor=None,
        topic_partitions=None,
    )
    _, _, _, _, forwarded = decode_request_frame(
        joined(client(s, encode_request_frame(request, 7, "app")).to_upstream)
    )
    assert forwarded.group_id == "a.billing"
    assert forwarded.subscribed_topic_regex == "a\\.(?:orders.*)"


def test_list_groups_shows_a_tenant_only_its_groups() -> None:
    from kio.schema.list_groups.v4 import request as listing
    from kio.schema.list_groups.v4 import response as listed

    s, _ = tenant_session()
    client(s, encode_request_frame(listing.ListGroupsRequest(states_filter=()), 3, "admin"))
    groups = tuple(
        listed.ListedGroup(group_id=g, protocol_type="consumer", group_state="Stable")
        for g in ("a.billing", "b.billing", "a.audit")
    )
    response = listed.ListGroupsResponse(
        throttle_time=ZERO, error_code=ErrorCode.none, groups=groups
    )
    _, seen = decode_response_frame(
        listed.ListGroupsResponse, joined(upstream(s, response_frame(response, 3)).to_client)
    )
    assert [g.group_id for g in seen.groups] == ["billing", "audit"]


def test_rules_see_the_clusters_names_within_a_tenant() -> None:
    rules = {"rules": [{"effect": "deny", "topics": ["a.secret"]}], "default": "allow"}
    s, _ = tenant_session(rules=rules)
    step = client(s, produce_to(5, "orders", "secret"))
    assert forwarded_topics(step) == ["a.orders"]
    back = joined(upstream(s, produced_by(5, "a.orders")).to_client)
    assert produce_errors(back) == [("orders", 0), ("secret", 29)]


def test_a_reload_moves_an_established_session_to_its_new_tenant() -> None:
    s, policy = tenant_session()
    assert forwarded_topics(client(s, produce_to(1, "orders"))) == ["a.orders"]
    upstream(s, produced_by(1, "a.orders"))
    moved = {"tenants": [{"name": "team-z", "principals": ["User:alice"]}]}
    policy.update("shared", frozenset(), False, None, tenancy(moved))
    assert forwarded_topics(client(s, produce_to(2, "orders"))) == ["team-z.orders"]


def test_a_brokers_error_message_quotes_the_tenants_own_name() -> None:
    import dataclasses

    from kio.schema.create_topics.v7 import request as create
    from kio.schema.create_topics.v7 import response as created

    from tests.kio_build import topic_result

    s, _ = tenant_session()
    request = create.CreateTopicsRequest(
        topics=(
            create.CreatableTopic(
                name="orders", num_partitions=1, replication_factor=1, assignments=(), configs=()
            ),
        ),
        timeout=datetime.timedelta(seconds=5),
        validate_only=False,
    )
    _, _, _, _, forwarded = decode_request_frame(
        joined(client(s, encode_request_frame(request, 2, "admin")).to_upstream)
    )
    assert [t.name for t in forwarded.topics] == ["a.orders"]
    result = dataclasses.replace(
        topic_result("a.orders", ErrorCode.topic_already_exists),
        error_message="Topic 'a.orders' already exists.",
    )
    answer = created.CreateTopicsResponse(throttle_time=ZERO, topics=(result,))
    back = joined(upstream(s, response_frame(answer, 2)).to_client)
    _, seen = decode_response_frame(created.CreateTopicsResponse, back)
    assert [(t.name, t.error_message) for t in seen.topics] == [
        ("orders", "Topic 'orders' already exists.")
    ]
