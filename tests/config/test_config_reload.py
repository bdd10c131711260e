"""Which keys a reload applies and which wait for a restart (`kproxy.config.reload_table`)."""

from __future__ import annotations

from typing import Any

import pytest

from kproxy.config.reload_table import LIVE, plan, settings_hash
from kproxy.config.settings import ConfigError, Settings, parse_config

BASE: dict[str, Any] = {
    "cluster": {
        "bootstrap_servers": ["b-1.internal:9092"],
        "dial_overrides": {"b-1.internal": "10.0.0.1"},
    },
    "listeners": {"bootstrap_port": 9092, "broker_port_base": 9100, "max_node_id": 10},
}


def settings(**sections: dict[str, Any]) -> Settings:
    data = {k: dict(v) for k, v in BASE.items()}
    for name, values in sections.items():
        data.setdefault(name, {}).update(values)
    return parse_config(data)


def test_nothing_changed() -> None:
    change = plan(settings(), settings())
    assert (change.applied, change.restart, change.result) == ([], [], "unchanged")


def test_live_keys_apply_and_the_derived_state_follows() -> None:
    new = settings(
        cluster={"dial_overrides": {"b-1.internal": "10.0.0.9"}},
        limits={"max_in_flight_requests": 7},
        log={"level": "DEBUG"},
    )
    change = plan(settings(), new)
    assert sorted(change.applied) == [
        "cluster.dial_overrides",
        "limits.max_in_flight_requests",
        "log.level",
    ]
    assert change.result == "applied"
    assert change.effective is not None
    assert change.effective.cluster.dial_address("b-1.internal", 9092) == ("10.0.0.9", 9092)
    assert change.effective.limits.max_in_flight_requests == 7


def test_restart_keys_keep_their_running_value() -> None:
    new = settings(
        listeners={"bootstrap_port": 9093},
        admin={"port": 9645},
        limits={"max_in_flight_requests": 5},
    )
    change = plan(settings(), new)
    assert change.applied == ["limits.max_in_flight_requests"]
    assert sorted(change.restart) == ["admin.port", "listeners.bootstrap_port"]
    assert change.result == "restart_needed"
    assert change.effective is not None
    assert change.effective.listeners.bootstrap_port == 9092
    assert change.effective.admin.port == 9644
    assert change.effective.limits.max_in_flight_requests == 5


def test_tls_files_reload_live_but_tls_on_or_off_needs_a_restart() -> None:
    tls = {"certificate": "a.pem", "key": "a-key.pem"}
    on = settings(listeners={"tls": tls})
    assert plan(settings(), on).restart == ["listeners.tls"]
    assert plan(on, settings()).restart == ["listeners.tls"]
    renewed = settings(listeners={"tls": {**tls, "certificate": "b.pem"}})
    assert plan(on, renewed).applied == ["listeners.tls"]


def test_a_mix_that_does_not_hold_together_is_an_error() -> None:
    """A new node port override would collide with the running bootstrap port (whose own
    change waits for a restart): the whole reload is refused."""
    new = settings(listeners={"bootstrap_port": 9300, "node_port_overrides": {50: 9092}})
    with pytest.raises(ConfigError, match=r"collides with listeners\.bootstrap_port"):
        plan(settings(), new)


def test_every_live_key_exists() -> None:
    for key in LIVE:
        if "." not in key:  # a mapping of sections as a whole (clusters)
            assert key in type(settings()).model_fields, key
            continue
        section, name = key.split(".")
        assert name in type(getattr(settings(), section)).model_fields, key


def test_the_fingerprint_follows_the_settings_but_not_a_secret() -> None:
    sasl = {"mechanism": "PLAIN", "username": "u", "password": "one"}
    a = settings(cluster={"sasl": sasl})
    b = settings(cluster={"sasl": {**sasl, "password": "two"}})
    assert settings_hash(a) == settings_hash(b)
    assert settings_hash(a) != settings_hash(settings())
    assert "one" not in a.model_dump_json()
