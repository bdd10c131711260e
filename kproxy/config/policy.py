"""The `listeners.api_policy` settings: which Kafka APIs this listener serves.

Names are the API names of Kafka's schemas (CreateTopics, DeleteRecords,
IncrementalAlterConfigs...), checked against kproxy's API table, so a typo fails at load
(with the nearest name) rather than leaving an API open.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, Strict, WithJsonSchema, model_validator

from kproxy.config.section import Section
from kproxy.config.types import fail, one_of
from kproxy.protocol.apis import APIS
from kproxy.session.policy import ALWAYS_ALLOWED

__all__ = ["ApiPolicySettings"]

_KEYS_BY_NAME = {info.name: key for key, info in APIS.items()}
_ALWAYS_ALLOWED_NAMES = sorted(APIS[k].name for k in ALWAYS_ALLOWED)


ApiName = Annotated[
    str,
    Strict(),
    AfterValidator(one_of(_KEYS_BY_NAME, "a Kafka API name")),
    WithJsonSchema({"type": "string", "enum": sorted(_KEYS_BY_NAME)}),
]


class ApiPolicySettings(Section):
    """An allow list or a deny list of API names (one of them)."""

    allow: tuple[ApiName, ...] | None = Field(
        None,
        description="serve only these APIs (ApiVersions, SaslHandshake and SaslAuthenticate "
        "always)",
    )
    deny: tuple[ApiName, ...] | None = Field(None, description="serve every API but these")
    advertise_denied: Annotated[bool, Strict()] = Field(
        False,
        description="keep refused APIs in ApiVersions answers: clients then send them and get "
        "the authorization error naming this listener, instead of failing at once with their "
        "own 'unsupported by the broker' error",
    )

    @model_validator(mode="after")
    def _one_list(self) -> ApiPolicySettings:
        if (self.allow is None) == (self.deny is None):
            raise fail("deny", "give allow or deny (one of them)")
        for name in self.deny or ():
            if _KEYS_BY_NAME[name] in ALWAYS_ALLOWED:
                raise fail(
                    "deny",
                    f"{name} cannot be denied: clients need {', '.join(_ALWAYS_ALLOWED_NAMES)} "
                    "before any other request",
                )
        return self

    def denied_keys(self) -> frozenset[int]:
        if self.deny is not None:
            return frozenset(_KEYS_BY_NAME[n] for n in self.deny)
        allowed = {_KEYS_BY_NAME[n] for n in self.allow or ()} | ALWAYS_ALLOWED
        return frozenset(APIS) - allowed
