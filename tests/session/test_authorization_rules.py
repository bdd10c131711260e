"""The rules engine (kproxy.session.authorization): who a rule applies to, literal,
prefix and glob names, the operation each API performs, Kafka's implied operations,
first match in order, and the default."""

from __future__ import annotations

from typing import Any

import pytest

from kproxy.config.authorization import AuthorizationSettings
from kproxy.session.authorization import Authorizer, NameMatcher

PRODUCE, FETCH, METADATA, CREATE_TOPICS, DELETE_TOPICS, JOIN_GROUP, DESCRIBE_GROUPS = (
    0,
    1,
    3,
    19,
    20,
    11,
    15,
)


def rules(*given: dict[str, Any], default: str = "deny") -> Authorizer:
    settings = AuthorizationSettings.model_validate({"rules": list(given), "default": default})
    return Authorizer.from_settings(settings)


@pytest.mark.parametrize(
    ("pattern", "name", "matches"),
    [
        ("orders", "orders", True),
        ("orders", "orders-1", False),
        ("orders-*", "orders-1", True),
        ("orders-*", "orders-", True),
        ("orders-*", "order", False),
        ("*", "anything", True),
        ("*-audit", "billing-audit", True),
        ("*-audit", "billing-audit-2", False),
        ("team-?-[ab]*", "team-x-b1", True),
        ("team-?-[ab]*", "team-x-c1", False),
    ],
)
def test_literal_prefix_and_glob_names(pattern: str, name: str, matches: bool) -> None:
    assert NameMatcher([pattern]).matches(name) is matches


def test_a_rule_applies_to_the_callers_it_names() -> None:
    authorizer = rules(
        {
            "effect": "allow",
            "principals": ["User:alice"],
            "addresses": ["10.1.0.0/16"],
            "client_ids": ["app-*"],
            "topics": ["t"],
        }
    )
    assert authorizer.scope("User:alice", "10.1.2.3", "app-1").allows(PRODUCE, "topic", "t")
    assert not authorizer.scope("User:bob", "10.1.2.3", "app-1").allows(PRODUCE, "topic", "t")
    assert not authorizer.scope("User:alice", "10.2.0.1", "app-1").allows(PRODUCE, "topic", "t")
    assert not authorizer.scope("User:alice", "10.1.2.3", "etl").allows(PRODUCE, "topic", "t")
    assert not authorizer.scope("User:alice", None, "app-1").allows(PRODUCE, "topic", "t")


def test_operations_are_those_of_each_api_with_kafkas_implied_describe() -> None:
    scope = rules({"effect": "allow", "topics": ["t"], "operations": ["read"]}).scope(
        "User:a", None, None
    )
    assert scope.allows(FETCH, "topic", "t")
    assert scope.allows(METADATA, "topic", "t")  # read implies describe
    assert not scope.allows(PRODUCE, "topic", "t")
    assert not scope.allows(CREATE_TOPICS, "topic", "t")
    assert not scope.allows(DELETE_TOPICS, "topic", "t")


def test_a_denied_describe_does_not_deny_read() -> None:
    scope = rules(
        {"effect": "deny", "topics": ["t"], "operations": ["describe"]},
        {"effect": "allow", "topics": ["t"]},
    ).scope("User:a", None, None)
    assert not scope.allows(METADATA, "topic", "t")
    assert scope.allows(FETCH, "topic", "t")


def test_the_first_match_decides_and_the_default_the_rest() -> None:
    authorizer = rules(
        {"effect": "deny", "topics": ["orders-secret"]},
        {"effect": "allow", "topics": ["orders-*"]},
        default="allow",
    )
    scope = authorizer.scope("User:a", None, None)
    assert not scope.allows(PRODUCE, "topic", "orders-secret")
    assert scope.allows(PRODUCE, "topic", "orders-1")
    assert scope.allows(PRODUCE, "topic", "payments")  # no rule: the default
    assert scope.allows(JOIN_GROUP, "group", "g")  # no rule names groups


def test_a_rule_names_one_kind_of_entity() -> None:
    scope = rules({"effect": "allow", "groups": ["app"]}).scope("User:a", None, None)
    assert scope.allows(JOIN_GROUP, "group", "app")
    assert scope.allows(DESCRIBE_GROUPS, "group", "app")
    assert not scope.allows(PRODUCE, "topic", "app")


def test_apis_restrict_a_rule_and_without_entities_refuse_an_api_whole() -> None:
    authorizer = rules(
        {"effect": "deny", "apis": ["DeleteTopics"]},
        {"effect": "allow", "apis": ["Produce"], "topics": ["*"]},
    )
    scope = authorizer.scope("User:a", None, None)
    assert not scope.api_allowed(DELETE_TOPICS)
    assert scope.api_allowed(PRODUCE)
    assert scope.allows(PRODUCE, "topic", "t")
    assert not scope.allows(FETCH, "topic", "t")
    assert authorizer.apis() == frozenset((DELETE_TOPICS, PRODUCE))


def test_a_rule_that_decides_nothing_fails_at_load() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="give apis or topics"):
        AuthorizationSettings.model_validate({"rules": [{"effect": "allow"}]})
