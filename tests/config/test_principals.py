"""`principals.tls_mapping_rules`: Kafka's `ssl.principal.mapping.rules`, its syntax and
its semantics (the examples of Kafka's documentation, KIP-371), and a bad rule refused
at load, naming where it is and what it says."""

from __future__ import annotations

import pytest

from kproxy.config.errors import ConfigError
from kproxy.config.principals import PrincipalSettings, map_subject, parse_rule
from kproxy.config.settings import parse_config

SUBJECT = "CN=Alice Smith,OU=ServiceUsers,O=Example,L=Paris,C=FR"


def mapped(rules: list[str], subject: str = SUBJECT) -> str | None:
    return map_subject(PrincipalSettings(tls_mapping_rules=tuple(rules)).mapping_rules(), subject)


@pytest.mark.parametrize(
    ("rules", "principal"),
    [
        (["DEFAULT"], SUBJECT),
        ([r"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/"], "Alice Smith"),
        ([r"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L"], "alice smith"),
        ([r"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U"], "ALICE SMITH"),
        ([r"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=.*$/$1@$3/"], "Alice Smith@Example"),
        ([r"RULE:^CN=(?P<who>[^,]+),.*$/${who}/"], "Alice Smith"),  # a named group
        ([r"RULE:^CN=([^,]+),.*$/user\$$1/"], "user$Alice Smith"),  # \$ is a dollar sign
        ([r"RULE:^CN=([^,]+),.*$/a\\b/"], "a\\b"),  # \\ is a backslash
        ([r"RULE:^OU=.*$/never/", "DEFAULT"], SUBJECT),  # the first that matches
        ([r"RULE:^OU=.*$/never/"], None),  # none matches: no one
        ([r"RULE:CN=Alice/x/"], None),  # the whole subject must match
    ],
)
def test_rules_map_a_subject_as_kafka_maps_it(rules: list[str], principal: str | None) -> None:
    assert mapped(rules) == principal


def test_the_default_is_the_subject_itself() -> None:
    assert PrincipalSettings().mapping_rules() == (None,)
    assert parse_rule(" DEFAULT ") is None


@pytest.mark.parametrize(
    ("rule", "why"),
    [
        ("RULE:^CN=(.*$/$1/", "does not compile"),
        ("RULE:^CN=(.*)$/$2/", "lacks"),
        ("RULE:^CN=(.*)$/${who}/", "lacks"),
        ("RULE:^CN=(.*)$/$1", "neither DEFAULT nor"),
        ("CN=(.*)", "neither DEFAULT nor"),
        ("RULE:^CN=(.*)$/$1/X", "neither DEFAULT nor"),
    ],
)
def test_a_bad_rule_fails_at_load_naming_its_place_and_text(rule: str, why: str) -> None:
    config = {
        "cluster": {"bootstrap_servers": ["b.invalid:9092"]},
        "principals": {"tls_mapping_rules": ["DEFAULT", rule]},
    }
    with pytest.raises(ConfigError) as failed:
        parse_config(config)
    text = str(failed.value)
    assert "principals.tls_mapping_rules" in text
    assert why in text and repr(rule) in text


def test_the_oauthbearer_claim_is_a_name() -> None:
    with pytest.raises(ConfigError, match=r"principals\.oauthbearer_claim"):
        parse_config(
            {
                "cluster": {"bootstrap_servers": ["b.invalid:9092"]},
                "principals": {"oauthbearer_claim": ""},
            }
        )
