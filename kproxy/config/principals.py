"""The `principals` settings: how kproxy names who is calling (`kproxy.session.identity`).

* `tls_mapping_rules`: Kafka's `ssl.principal.mapping.rules`, in its syntax, for a
  client certificate's subject (RFC 2253, as Java's X500Principal writes it). Each rule
  is `RULE:pattern/replacement/` with an optional `L` or `U` after it (lower or upper
  case the result), or `DEFAULT` (the subject as it is). The first rule whose pattern
  matches the whole subject names the principal; a subject no rule matches names no
  one, and the connection is closed, as a Kafka broker fails its authentication.
* `oauthbearer_claim`: the JWT claim that names an OAUTHBEARER client, as the broker's
  `sasl.oauthbearer.sub.claim.name` (default `sub`).
"""

from __future__ import annotations

import re
from typing import Annotated, Final

from pydantic import Field, Strict, field_validator

from kproxy.config.section import Section

__all__ = ["PrincipalMappingRule", "PrincipalSettings", "map_subject", "parse_rule"]

# Kafka's SslPrincipalMapper.RULE_PARSER: a pattern and a replacement, each free of
# unescaped slashes, then an optional case flag.
_RULE: Final = re.compile(r"RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)")
# Java's replacement syntax: $n or ${name} a group, \x the character x.
_JAVA_REPLACEMENT: Final = re.compile(r"\\(.)|\$(\d+)|\$\{(\w+)\}")


class PrincipalMappingRule:
    """One parsed rule: None for DEFAULT."""

    __slots__ = ("case", "pattern", "replacement")

    def __init__(self, pattern: re.Pattern[str], replacement: str, case: str) -> None:
        self.pattern = pattern
        self.replacement = replacement  # in Python's `Match.expand` syntax
        self.case = case

    def apply(self, subject: str) -> str | None:
        found = self.pattern.fullmatch(subject)
        if found is None:
            return None
        name = found.expand(self.replacement)
        if self.case == "L":
            return name.lower()
        return name.upper() if self.case == "U" else name


def _python_replacement(java: str) -> str:
    def one(found: re.Match[str]) -> str:
        if found[1] is not None:
            return found[1].replace("\\", "\\\\")
        return f"\\g<{found[2] or found[3]}>"

    return _JAVA_REPLACEMENT.sub(one, java)


def parse_rule(text: str) -> PrincipalMappingRule | None:
    """A rule as Kafka writes it; ValueError naming what is wrong."""
    rule = text.strip()
    if rule == "DEFAULT":
        return None
    found = _RULE.fullmatch(rule)
    if found is None:
        raise ValueError(f"{text!r} is neither DEFAULT nor RULE:pattern/replacement/[LU]")
    try:
        pattern = re.compile(found[1])
    except re.error as exc:
        raise ValueError(f"{text!r}: its pattern does not compile: {exc}") from None
    replacement = _python_replacement(found[2])
    try:  # compiling the template names a missing group here, not at a client's handshake
        pattern.sub(replacement, "")
    except (re.error, IndexError) as exc:
        raise ValueError(
            f"{text!r}: its replacement names a group its pattern lacks ({exc})"
        ) from None
    return PrincipalMappingRule(pattern, replacement, found[3])


def map_subject(rules: tuple[PrincipalMappingRule | None, ...], subject: str) -> str | None:
    """The principal's name for a certificate subject (None: no rule matches it)."""
    for rule in rules:
        if rule is None:
            return subject
        name = rule.apply(subject)
        if name is not None:
            return name
    return None


class PrincipalSettings(Section):
    tls_mapping_rules: tuple[Annotated[str, Strict()], ...] = Field(
        ("DEFAULT",),
        description="Kafka's ssl.principal.mapping.rules, one rule per item: "
        "RULE:pattern/replacement/[LU] or DEFAULT (the subject as it is)",
    )
    oauthbearer_claim: Annotated[str, Strict(), Field(min_length=1)] = Field(
        "sub", description="the JWT claim that names an OAUTHBEARER client"
    )

    @field_validator("tls_mapping_rules")
    @classmethod
    def _rules_parse(cls, rules: tuple[str, ...]) -> tuple[str, ...]:
        for rule in rules:
            parse_rule(rule)
        return rules

    def mapping_rules(self) -> tuple[PrincipalMappingRule | None, ...]:
        return tuple(parse_rule(rule) for rule in self.tls_mapping_rules)
