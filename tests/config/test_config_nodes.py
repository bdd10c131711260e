"""kproxy.config for the cluster's nodes: each node's port (fixed or OS-chosen),
dial overrides, the API policy's allow and deny lists, and the KRaft quorum's
controllers (KIP-853)."""

from __future__ import annotations

from typing import Any

import pytest

from kproxy.config.settings import (
    ListenerSettings,
    parse_config,
)
from tests.config_builders import MINIMAL, cfg, error_of

# --------------------------------------------------------------------------------------
# port_for_node
# --------------------------------------------------------------------------------------


def test_port_for_node() -> None:
    listeners = ListenerSettings(
        broker_port_base=9100, max_node_id=10, node_port_overrides={3: 9500, 5000: 9600}
    )
    assert listeners.port_for_node(0) == 9100
    assert listeners.port_for_node(1) == 9101
    assert listeners.port_for_node(3) == 9500  # override wins over base + id
    assert listeners.port_for_node(10) == 9110  # max_node_id is inclusive
    assert listeners.port_for_node(11) is None
    assert listeners.port_for_node(5000) == 9600  # override beyond max_node_id
    assert listeners.port_for_node(-1) is None


def test_port_for_node_os_chosen() -> None:
    # broker_port_base 0 (demo and tests): every mappable node gets an OS-chosen port.
    s = parse_config(
        cfg(
            listeners={
                "bootstrap_port": 0,
                "broker_port_base": 0,
                "max_node_id": 10,
                "node_port_overrides": {20: 20000},
            },
            admin={"port": 0},
        )
    )
    assert s.listeners.port_for_node(0) == 0
    assert s.listeners.port_for_node(10) == 0
    assert s.listeners.port_for_node(11) is None
    assert s.listeners.port_for_node(20) == 20000


def test_os_chosen_node_ports_never_collide() -> None:
    s = parse_config(
        cfg(listeners={"broker_port_base": 0, "bootstrap_port": 5, "node_port_overrides": {0: 7}})
    )
    assert s.listeners.port_for_node(0) == 7
    assert s.listeners.port_for_node(7) == 0


def test_port_for_node_defaults() -> None:
    listeners = parse_config(MINIMAL).listeners
    assert listeners.port_for_node(0) == 9100
    assert listeners.port_for_node(500) == 9600
    assert listeners.port_for_node(501) is None


def test_host_only_dial_overrides_keep_the_port() -> None:
    settings = parse_config(
        cfg(
            cluster={
                "dial_overrides": {
                    "broker-1.kafka.invalid": "127.0.0.1",
                    "broker-2.kafka.invalid:9092": "10.0.0.2:19092",
                }
            }
        )
    )
    c = settings.cluster
    assert c.dial_address("BROKER-1.kafka.invalid", 40123) == ("127.0.0.1", 40123)
    assert c.dial_address("broker-2.kafka.invalid", 9092) == ("10.0.0.2", 19092)
    assert c.dial_address("broker-2.kafka.invalid", 9093) == ("broker-2.kafka.invalid", 9093)


# --------------------------------------------------------------------------- api_policy


def policy(**lists: Any) -> dict[str, Any]:
    return cfg(listeners={"name": "gateway", "api_policy": lists})


def test_node_ids_as_json_keys_are_taken() -> None:
    """JSON object keys are strings, so a configuration written from JSON or rendered by
    Helm names node 1001 as "1001"; only whole decimal numbers are taken."""
    s = parse_config(cfg(listeners={"max_node_id": 10, "node_port_overrides": {"1001": 9201}}))
    assert s.listeners.node_port_overrides == {1001: 9201}
    for key in ("-1", "1.5", " 1", "\u0661"):
        bad = cfg(listeners={"max_node_id": 10, "node_port_overrides": {key: 9201}})
        assert "must be an integer" in error_of(bad), key


def test_api_policy_deny_list_names_apis() -> None:
    settings = parse_config(policy(deny=["CreateTopics", "DeleteRecords"]))
    assert settings.listeners.denied_apis() == {19, 21}
    assert settings.listeners.name == "gateway"
    assert not settings.listeners.advertises_denied()
    assert parse_config(MINIMAL).listeners.denied_apis() == frozenset()
    advertising = policy(deny=["CreateTopics"], advertise_denied=True)
    assert parse_config(advertising).listeners.advertises_denied()


def test_api_policy_allow_list_refuses_everything_else_but_what_clients_need_first() -> None:
    denied = parse_config(policy(allow=["Produce", "Fetch", "Metadata"])).listeners.denied_apis()
    assert not {0, 1, 3, 18, 17, 36} & denied  # ApiVersions and SASL stay
    assert {19, 20, 21, 32, 33} <= denied


@pytest.mark.parametrize(
    ("lists", "message"),
    [
        (
            {"deny": ["CreateTopic"]},
            "listeners.api_policy.deny[0]: not a Kafka API name (did you mean 'CreateTopics'?) "
            "(got 'CreateTopic')",
        ),
        ({"deny": ["ApiVersions"]}, "listeners.api_policy.deny: ApiVersions cannot be denied"),
        ({"deny": [], "allow": []}, "listeners.api_policy.deny: give allow or deny"),
        ({}, "listeners.api_policy.deny: give allow or deny"),
        ({"deny": "CreateTopics"}, "listeners.api_policy.deny: must be a list"),
        (
            {"deny": ["CreateTopics"], "advertise_denied": "yes"},
            "listeners.api_policy.advertise_denied: must be true or false (got 'yes')",
        ),
    ],
)
def test_api_policy_errors_name_the_bad_value(lists: dict[str, Any], message: str) -> None:
    assert error_of(policy(**lists)).startswith(message)


# --------------------------------------------------------------------------------------
# quorum (KIP-853 controllers through kproxy)
# --------------------------------------------------------------------------------------


def quorum_cfg(**controllers: dict[str, Any]) -> dict[str, Any]:
    return cfg(quorum={"controllers": controllers})


def test_quorum_controllers_parse_with_decimal_string_ids() -> None:
    s = parse_config(quorum_cfg(**{"3000": {"port": 19093, "address": "c-0.invalid:9093"}}))
    assert s.quorum.controllers[3000].port == 19093
    assert s.quorum.controllers[3000].address == ("c-0.invalid", 9093)
    assert s.quorum.ports() == {19093: 3000}
    assert parse_config(cfg()).quorum.controllers == {}


@pytest.mark.parametrize(
    ("controllers", "expected"),
    [
        (
            {"1": {"port": 9092, "address": "c.invalid:9093"}},
            "quorum.controllers.1.port: port 9092 collides with listeners.bootstrap_port",
        ),
        (
            {"1": {"port": 9644, "address": "c.invalid:9093"}},
            "quorum.controllers.1.port: port 9644 collides with admin.port",
        ),
        (
            {"1": {"port": 9105, "address": "c.invalid:9093"}},
            "quorum.controllers.1.port: port 9105 collides with the port of node 5 "
            "(broker_port_base + 5)",
        ),
        (
            {
                "1": {"port": 19001, "address": "c.invalid:9093"},
                "2": {"port": 19001, "address": "d.invalid:9093"},
            },
            "quorum.controllers.2.port: port 19001 is also controller 1's",
        ),
        (
            {"1": {"port": 19001, "address": "c.invalid"}},
            "quorum.controllers.\"1\".address: must be host:port (got 'c.invalid')",
        ),
        (
            {"1": {"port": 0, "address": "c.invalid:9093"}},
            'quorum.controllers."1".port: must be >= 1 (got 0)',
        ),
    ],
)
def test_quorum_ports_and_addresses_are_checked(controllers: dict[str, Any], expected: str) -> None:
    assert error_of(quorum_cfg(**controllers)) == expected


def test_a_controller_port_may_not_be_a_node_override() -> None:
    data = quorum_cfg(**{"1": {"port": 19001, "address": "c.invalid:9093"}})
    data["listeners"] = {"node_port_overrides": {"2000": 19001}}
    assert error_of(data) == ("quorum.controllers.1.port: port 19001 is also used by node 2000")


def test_the_quorum_needs_a_restart_to_change() -> None:
    from kproxy.config.reload_table import plan

    old = parse_config(cfg())
    new = parse_config(quorum_cfg(**{"1": {"port": 19001, "address": "c.invalid:9093"}}))
    assert plan(old, new).restart == ["quorum.controllers"]


def test_the_default_node_ports_stay_clear_of_the_default_admin_port() -> None:
    """Node N is served on 9100 + N up to max_node_id: with the defaults the range ends
    below the admin port (9644), which it once ran through."""
    settings = parse_config(MINIMAL)
    lst, admin = settings.listeners, settings.admin
    top = lst.broker_port_base + lst.max_node_id
    assert top < admin.port
    assert lst.port_for_node(lst.max_node_id) == top


def test_an_admin_port_among_the_node_ports_is_refused() -> None:
    assert error_of(cfg(listeners={"max_node_id": 1000})) == (
        "admin.port: port 9644 is the port of node 544 (listeners.broker_port_base 9100 + "
        "544): move admin.port, or lower listeners.max_node_id below 544"
    )
    # An override for that node moves it off the port; admin disabled frees it.
    assert parse_config(cfg(listeners={"max_node_id": 1000, "node_port_overrides": {544: 9099}}))
    assert parse_config(cfg(listeners={"max_node_id": 1000}, admin={"enabled": False}))
