"""A listener's authorization rules, compiled (sans-IO): may this caller perform this
API's operation on this topic, group or transactional id?

The rules (`kproxy.config.authorization`) are matched in order and the first match
decides; `default` decides what no rule matches. A connection's caller (principal,
address, client id) picks the rules that can apply to it once, as a `Scope`, and the
scope remembers its answers, so a request costs a dictionary look-up per entity it
names. One `Authorizer` per listener, shared by its sessions; a reload makes a new
one, and sessions take new scopes when they see it changed.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections.abc import Iterable
from typing import Any, Final, Protocol

from kproxy.protocol.apis import APIS
from kproxy.session.operations import ALL, granted, operation_of

_KEYS_BY_NAME: Final = {info.name: key for key, info in APIS.items()}
_GLOB_CHARS: Final = frozenset("*?[")
# A scope's remembered answers, at most: a client naming ever new topics cannot grow it.
_ANSWERS_KEPT: Final = 4096
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class NameMatcher:
    """Literal names, prefixes (`orders-*`) and globs, matched as one."""

    __slots__ = ("globs", "literals", "prefixes")

    def __init__(self, patterns: Iterable[str]) -> None:
        literals: set[str] = set()
        prefixes: list[str] = []
        globs: list[re.Pattern[str]] = []
        for pattern in patterns:
            head = pattern[:-1]
            if not _GLOB_CHARS & set(pattern):
                literals.add(pattern)
            elif pattern.endswith("*") and not _GLOB_CHARS & set(head):
                prefixes.append(head)  # Kafka's PREFIXED; "*" alone is every name
            else:
                globs.append(re.compile(fnmatch.translate(pattern)))
        self.literals = frozenset(literals)
        self.prefixes = tuple(prefixes)
        self.globs = tuple(globs)

    def matches(self, name: str) -> bool:
        if name in self.literals or name.startswith(self.prefixes):
            return True
        return any(glob.match(name) for glob in self.globs)


class Rule:
    """One rule, compiled."""

    __slots__ = (
        "addresses",
        "allow",
        "apis",
        "client_ids",
        "entities",
        "operations",
        "principals",
    )

    def __init__(self, settings: Any) -> None:
        self.allow: bool = settings.effect == "allow"
        self.principals = matcher(settings.principals)
        self.client_ids = matcher(settings.client_ids)
        self.addresses = networks(settings.addresses)
        self.apis: frozenset[int] | None = (
            None if settings.apis is None else frozenset(_KEYS_BY_NAME[a] for a in settings.apis)
        )
        operations = None if settings.operations is None else frozenset(settings.operations)
        if self.allow:
            operations = granted(operations)
        elif operations is not None and ALL in operations:
            operations = None
        self.operations = operations
        self.entities: dict[str, NameMatcher] = {
            kind: NameMatcher(patterns)
            for kind, patterns in (
                ("topic", settings.topics),
                ("group", settings.groups),
                ("transactional_id", settings.transactional_ids),
            )
            if patterns is not None
        }

    def applies_to(self, principal: str, address: Any, client_id: str) -> bool:
        if self.principals is not None and not self.principals.matches(principal):
            return False
        if self.client_ids is not None and not self.client_ids.matches(client_id):
            return False
        return within(address, self.addresses)


def matcher(patterns: tuple[str, ...] | None) -> NameMatcher | None:
    """The patterns of a setting, compiled (None: the setting is absent, any matches)."""
    return None if patterns is None else NameMatcher(patterns)


def networks(addresses: tuple[str, ...] | None) -> tuple[Network, ...] | None:
    """The networks of a setting, parsed (None: absent, any address matches)."""
    return None if addresses is None else tuple(ipaddress.ip_network(a) for a in addresses)


def within(address: Any, allowed: tuple[Network, ...] | None) -> bool:
    """Whether a client's address (`address_of`) is in one of the networks of a setting
    (None: absent, any address is)."""
    if allowed is None:
        return True
    return address is not None and any(address in net for net in allowed)


def address_of(host: str | None) -> Any:
    """A client's address as networks are matched against (None: not an IP address)."""
    try:
        return None if host is None else ipaddress.ip_address(host)
    except ValueError:
        return None


class Authorizer:
    """One listener's rules."""

    __slots__ = ("default_allow", "rules")

    def __init__(self, rules: tuple[Rule, ...], default_allow: bool) -> None:
        self.rules = rules
        self.default_allow = default_allow

    @classmethod
    def from_settings(cls, settings: Any) -> Authorizer:
        """From `AuthorizationSettings`."""
        return cls(tuple(Rule(r) for r in settings.rules), settings.default == "allow")

    def apis(self) -> frozenset[int]:
        """The APIs a rule names: checked even when they name no entity."""
        return frozenset(key for rule in self.rules if rule.apis is not None for key in rule.apis)

    def scope(self, principal: str, host: str | None, client_id: str | None) -> Scope:
        address, who = address_of(host), client_id or ""
        return Scope(self, tuple(r for r in self.rules if r.applies_to(principal, address, who)))


class Permissions(Protocol):
    """What one caller may do: a `Scope` of the rules, or a tenant's
    (`kproxy.session.tenancy.TenantScope`)."""

    def api_allowed(self, api_key: int) -> bool: ...

    def allows(self, api_key: int, kind: str, name: str) -> bool: ...


class Scope:
    """The rules that apply to one caller, and the answers given so far."""

    __slots__ = ("_answers", "authorizer", "rules")

    def __init__(self, authorizer: Authorizer, rules: tuple[Rule, ...]) -> None:
        self.authorizer = authorizer
        self.rules = rules
        self._answers: dict[tuple[int, str, str], bool] = {}

    def api_allowed(self, api_key: int) -> bool:
        """Whether a rule naming APIs and no entities refuses this API whole."""
        for rule in self.rules:
            if not rule.entities and rule.apis is not None and api_key in rule.apis:
                return rule.allow
        return True

    def allows(self, api_key: int, kind: str, name: str) -> bool:
        """Whether this API's operation on the entity `kind` `name` is allowed."""
        key = (api_key, kind, name)
        answer = self._answers.get(key)
        if answer is None:
            answer = self._decide(api_key, kind, name)
            if len(self._answers) >= _ANSWERS_KEPT:
                self._answers.clear()
            self._answers[key] = answer
        return answer

    def _decide(self, api_key: int, kind: str, name: str) -> bool:
        operation = operation_of(api_key, kind)
        for rule in self.rules:
            names = rule.entities.get(kind)
            if names is None or (rule.apis is not None and api_key not in rule.apis):
                continue
            if rule.operations is not None and operation not in rule.operations:
                continue
            if names.matches(name):
                return rule.allow
        return self.authorizer.default_allow
