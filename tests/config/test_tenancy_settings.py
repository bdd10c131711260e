"""`listeners.tenancy`: tenants and how connections are matched to them, and a
configuration that could let one tenant reach another's names refused at load, naming
where and why."""

from __future__ import annotations

from typing import Any

import pytest

from kproxy.config.errors import ConfigError
from kproxy.config.settings import parse_config


def config(tenancy: dict[str, Any]) -> dict[str, Any]:
    return {
        "cluster": {"bootstrap_servers": ["b.invalid:9092"]},
        "listeners": {"tenancy": tenancy},
    }


def test_a_tenants_prefix_is_its_name_and_a_dot_unless_given() -> None:
    settings = parse_config(
        config({"tenants": [{"name": "team-a"}, {"name": "team-b", "prefix": "b_"}]})
    )
    tenancy = settings.listeners.tenancy
    assert tenancy is not None and tenancy.unassigned == "deny"
    assert [t.names_prefix for t in tenancy.tenants] == ["team-a.", "b_"]
    assert settings.listeners.tenants() is not None


@pytest.mark.parametrize(
    ("tenants", "where", "why"),
    [
        (
            [{"name": "a", "prefix": "team."}, {"name": "b", "prefix": "team.x."}],
            "tenants.1.prefix",
            "one starts the other",
        ),
        ([{"name": "a"}, {"name": "a", "prefix": "z."}], "tenants.1.name", "another tenant"),
        ([{"name": "a", "prefix": "team a."}], "tenants.0.prefix", "may not hold"),
        ([{"name": "a", "prefix": "x" * 201}], "tenants.0.prefix", "at most 200 characters"),
        ([{"name": "a/b"}], "tenants.0.name", "should match pattern"),
        ([{"name": "a", "addresses": ["10.0.0.0/33"]}], "tenants.0.addresses", "network"),
        ([{"name": "a", "server_names": ["b[.example"]}], "tenants.0.server_names", "never closed"),
        ([], "tenancy.tenants", "must not be empty"),
    ],
)
def test_a_tenancy_that_could_leak_or_does_not_parse_fails_at_load(
    tenants: list[dict[str, Any]], where: str, why: str
) -> None:
    with pytest.raises(ConfigError) as failed:
        parse_config(config({"tenants": tenants}))
    text = str(failed.value)
    assert "listeners.tenancy" in text and where in text and why in text, text
