"""The `listeners.authorization` settings: who may do what to which topics, groups and
transactional ids (`kproxy.session.authorization` enforces them).

Rules are matched in order; the first that matches a request's caller, API, operation
and entity decides, and `default` decides when none does. A name pattern is a literal
(`orders`), a prefix (`orders-*`: Kafka's PREFIXED pattern type) or a glob (`*-audit`,
`team-?-[ab]*`); a pattern with a `[` it does not close fails at load, as does an
unknown API or operation name or an address that is not a network.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, Strict, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from kproxy.config.policy import ApiName
from kproxy.config.proxy_protocol import Network
from kproxy.config.section import Section
from kproxy.config.types import fail, one_of
from kproxy.session.operations import OPERATION_NAMES

__all__ = ["AuthorizationRule", "AuthorizationSettings", "NamePattern"]


def _pattern(value: str) -> str:
    if not value:
        raise PydanticCustomError("pattern", "{message}", {"message": "an empty name pattern"})
    depth = 0
    for char in value:
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
    if depth:
        raise PydanticCustomError(
            "pattern", "{message}", {"message": f"invalid glob {value!r}: '[' is never closed"}
        )
    return value


NamePattern = Annotated[
    str,
    Strict(),
    AfterValidator(_pattern),
    WithJsonSchema(
        {
            "type": "string",
            "description": "a literal name, a prefix ending in * or a glob (* ? [...])",
        }
    ),
]


Operation = Annotated[
    str,
    Strict(),
    AfterValidator(one_of(OPERATION_NAMES, "an operation")),
    WithJsonSchema({"type": "string", "enum": sorted(OPERATION_NAMES)}),
]


class AuthorizationRule(Section):
    """Who (every key given must match; none given: anyone), then what it decides."""

    effect: Literal["allow", "deny"] = Field(..., description="what a match decides")
    principals: tuple[NamePattern, ...] | None = Field(
        None, description="principals, as Kafka writes them (User:alice), or patterns"
    )
    addresses: tuple[Network, ...] | None = Field(
        None, description="client addresses, as networks in CIDR notation"
    )
    client_ids: tuple[NamePattern, ...] | None = Field(
        None, description="client ids, or patterns of them"
    )
    apis: tuple[ApiName, ...] | None = Field(
        None,
        description="the APIs it applies to (absent: all); a rule with APIs and no "
        "entities allows or denies those APIs whole",
    )
    operations: tuple[Operation, ...] | None = Field(
        None,
        description="Kafka's ACL operations it applies to (absent: all); an allowed read, "
        "write, delete or alter allows describe, as Kafka's do",
    )
    topics: tuple[NamePattern, ...] | None = Field(None, description="topic name patterns")
    groups: tuple[NamePattern, ...] | None = Field(None, description="group id patterns")
    transactional_ids: tuple[NamePattern, ...] | None = Field(
        None, description="transactional id patterns"
    )

    @model_validator(mode="after")
    def _decides_something(self) -> AuthorizationRule:
        if self.apis is None and not self.names_entities():
            raise fail("effect", "give apis or topics, groups or transactional_ids")
        return self

    def names_entities(self) -> bool:
        return (self.topics, self.groups, self.transactional_ids) != (None, None, None)


class AuthorizationSettings(Section):
    """The rules of one listener, in order."""

    rules: tuple[AuthorizationRule, ...] = Field(
        ..., description="matched in order: the first match decides"
    )
    default: Literal["allow", "deny"] = Field(
        "deny",
        description="what decides an entity no rule matches (deny, as a Kafka broker "
        "without allow.everyone.if.no.acl.found)",
    )
