"""The generated protocol tables: regenerating changes nothing, and what they say is pinned.

* Regenerating from the schemas the repository carries (`schemas/`) into a temporary
  directory gives exactly the committed modules, in a plain clone.
* Those schemas are Kafka's own, reduced by tools/vendor_schemas.py and nothing else
  (checked against an outside copy when one is beside the repository).
* ENDPOINT_RULES, every broker address any message carries, is pinned here: a Kafka
  version that adds an address field changes the generated list and fails this test
  instead of leaking that address to clients.
* Every rule's (api, direction, versions) has a walk plan, so no version that carries an
  address can pass through unwalked.
* Facts of the API table that clients depend on (docs/protocol.md §3).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kproxy.protocol.apis import APIS, header_versions, is_flexible
from kproxy.protocol.generated.messages import ENDPOINT_RULES
from kproxy.protocol.plan import plan_for

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "schemas"
OUTSIDE_SCHEMAS = REPO.parent / "shared" / "kafka-message-schemas"
GENERATED = REPO / "kproxy" / "protocol" / "generated"

PINNED_ENDPOINT_RULES = [
    (0, "response", 10, 13, "NodeEndpoints[]", "NodeId:int32,Host:string,Port:int32,Rack:string"),
    (1, "response", 16, 18, "NodeEndpoints[]", "NodeId:int32,Host:string,Port:int32,Rack:string"),
    (3, "response", 0, 0, "Brokers[]", "NodeId:int32,Host:string,Port:int32"),
    (3, "response", 1, 13, "Brokers[]", "NodeId:int32,Host:string,Port:int32,Rack:string"),
    (4, "request", 0, 7, "LiveLeaders[]", "BrokerId:int32,HostName:string,Port:int32"),
    (6, "request", 0, 0, "LiveBrokers[]", "Id:int32,V0Host:string,V0Port:int32"),
    (6, "request", 1, 2, "LiveBrokers[].Endpoints[]", "Port:int32,Host:string"),
    (6, "request", 3, 8, "LiveBrokers[].Endpoints[]", "Port:int32,Host:string,Listener:string"),
    (10, "response", 0, 3, "", "ErrorCode:int16,NodeId:int32,Host:string,Port:int32"),
    (10, "response", 4, 6, "Coordinators[]", "NodeId:int32,Host:string,Port:int32,ErrorCode:int16"),
    (52, "response", 1, 2, "NodeEndpoints[]", "NodeId:int32,Host:string,Port:uint16"),
    (53, "request", 1, 1, "LeaderEndpoints[]", "Name:string,Host:string,Port:uint16"),
    (53, "response", 1, 1, "NodeEndpoints[]", "NodeId:int32,Host:string,Port:uint16"),
    (54, "request", 1, 1, "LeaderEndpoints[]", "Name:string,Host:string,Port:uint16"),
    (54, "response", 1, 1, "NodeEndpoints[]", "NodeId:int32,Host:string,Port:uint16"),
    (55, "response", 2, 2, "Nodes[].Listeners[]", "Name:string,Host:string,Port:uint16"),
    (59, "response", 1, 1, "NodeEndpoints[]", "NodeId:int32,Host:string,Port:uint16"),
    (60, "response", 0, 2, "Brokers[]", "BrokerId:int32,Host:string,Port:int32,Rack:string"),
    (62, "request", 0, 4, "Listeners[]", "Name:string,Host:string,Port:uint16"),
    (70, "request", 0, 0, "Listeners[]", "Name:string,Host:string,Port:uint16"),
    (78, "response", 0, 2, "NodeEndpoints[]", "NodeId:int32,Host:string,Port:int32,Rack:string"),
    (79, "response", 0, 2, "NodeEndpoints[]", "NodeId:int32,Host:string,Port:int32,Rack:string"),
    (80, "request", 0, 1, "Listeners[]", "Name:string,Host:string,Port:uint16"),
    (82, "request", 0, 0, "Listeners[]", "Name:string,Host:string,Port:uint16"),
    (82, "response", 0, 0, "CurrentLeader", "LeaderId:int32,Host:string,Port:int32"),
]


def test_regenerating_changes_nothing(tmp_path: Path) -> None:
    assert (SCHEMAS / "apache-kafka-4.4" / "ProduceRequest.json").is_file()
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "generate_protocol.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("api_keys.py", "messages.py", "layouts.py", "entities.py"):
        fresh = (tmp_path / name).read_text()
        committed = (GENERATED / name).read_text()
        assert fresh == committed, f"{name} differs from a fresh generation: regenerate it"


@pytest.mark.parametrize("version", ["apache-kafka-4.4", "apache-kafka-3.9"])
def test_vendored_schemas_are_kafkas_reduced(version: str) -> None:
    outside = OUTSIDE_SCHEMAS / version
    if not outside.is_dir():
        pytest.skip(f"no outside copy of Kafka's schemas at {outside} to compare with")
    sys.path.insert(0, str(REPO / "tools"))
    try:
        from vendor_schemas import reduce_schema
    finally:
        sys.path.pop(0)
    ours = sorted(p.name for p in (SCHEMAS / version).glob("*.json"))
    assert ours == sorted(p.name for p in outside.glob("*.json"))
    for name in ours:
        expected = reduce_schema((outside / name).read_text())
        assert (SCHEMAS / version / name).read_text() == expected, name
        assert '"about"' not in expected


def test_schemas_carry_their_licence_and_sources() -> None:
    assert "Apache License" in (SCHEMAS / "LICENSE").read_text()
    readme = (SCHEMAS / "README.md").read_text()
    assert "d79bd502ec7f" in readme and "c821449f" in readme


def test_generated_header_names_the_kafka_commits() -> None:
    for name in ("api_keys.py", "messages.py", "layouts.py", "entities.py"):
        head = (GENERATED / name).read_text()[:600]
        assert "d79bd502ec7f" in head and "c821449f" in head, name


def test_endpoint_rules_are_pinned() -> None:
    assert ENDPOINT_RULES == PINNED_ENDPOINT_RULES


def test_every_version_that_carries_an_address_has_a_walk_plan() -> None:
    missing = [
        (api, kind, v)
        for api, kind, first, last, _path, _fields in ENDPOINT_RULES
        for v in range(first, last + 1)
        if plan_for(api, kind == "request", v) is None
    ]
    assert missing == []


def test_all_95_api_keys() -> None:
    assert sorted(APIS) == list(range(95))
    assert APIS[0].name == "Produce" and APIS[18].name == "ApiVersions"
    assert APIS[94].name and all(info.versions for info in APIS.values())


def test_api_versions_response_always_uses_header_v0() -> None:
    # KIP-511: a client that sent an ApiVersions version the broker does not know must
    # still read the answer, so its response header never grows tagged fields.
    for version in APIS[18].versions:
        assert header_versions(18, version) == (2 if version >= 3 else 1, 0)


@pytest.mark.parametrize(
    ("api_key", "version", "headers"),
    [
        (0, 0, (1, 0)),  # Produce v0: classic
        (0, 8, (1, 0)),
        (0, 9, (2, 1)),  # Produce v9: first flexible (KIP-482)
        (1, 11, (1, 0)),
        (1, 12, (2, 1)),  # Fetch v12: first flexible
        (3, 8, (1, 0)),
        (3, 9, (2, 1)),  # Metadata v9: first flexible
        (10, 3, (2, 1)),  # FindCoordinator v3: first flexible
        (17, 1, (1, 0)),  # SaslHandshake is never flexible
    ],
)
def test_header_versions(api_key: int, version: int, headers: tuple[int, int]) -> None:
    assert header_versions(api_key, version) == headers
    assert is_flexible(api_key, version) == (headers[0] == 2)


def test_versions_kafka_4_removed_are_kept() -> None:
    # KIP-896 removed these from Kafka 4.0; kproxy serves older clusters and clients.
    assert APIS[0].min_version == 0 and APIS[1].min_version == 0 and APIS[3].min_version == 0
    assert header_versions(0, 2) is not None
    assert header_versions(95, 0) is None and header_versions(0, 99) is None
