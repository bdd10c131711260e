"""Tenant renaming over every API and version that names a topic, group or
transactional id, against kio (an independent codec whose types tell those names from
other strings): a request renamed for its tenant names, by kio's reading, exactly what
it named with the prefix, and renamed back it is the original to the byte; a response
mixing two tenants' names reaches a tenant with only its own, unprefixed."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kproxy.config.tenancy import TenancySettings
from kproxy.protocol.apis import FIND_COORDINATOR, is_flexible
from kproxy.protocol.entities import read_message
from kproxy.protocol.generated.entities import ENTITY_FIELDS
from kproxy.protocol.headers import parse_request_header
from kproxy.protocol.layout_codec import LayoutWriter
from kproxy.protocol.refusal import CONFIG_RESOURCE_APIS
from kproxy.protocol.renaming import MESSAGE, rename
from kproxy.session.tenancy import Tenancy, TenantRefusal, to_cluster
from tests.kio_entities import kio_named
from tests.kio_strategies import message_strategy
from tests.kio_support import (
    decode_body,
    encode_body,
    encode_request_frame,
    kio_message_class,
    kio_versions,
)

TENANCY = Tenancy.from_settings(
    TenancySettings.model_validate({"tenants": [{"name": "team-a"}, {"name": "team-b"}]})
)
TEAM_A, TEAM_B = TENANCY.tenants
_RENAMED_TOO = {FIND_COORDINATOR, *CONFIG_RESOURCE_APIS, 68, 69}  # unannotated names


def _pairs(is_request: bool) -> list[tuple[int, int]]:
    kind = "request" if is_request else "response"
    return sorted(
        (key, version)
        for key in {k for k, r, _ in ENTITY_FIELDS if r == is_request} | _RENAMED_TOO
        for version in kio_versions(key, kind)  # type: ignore[arg-type]
        if (key, is_request, version) in ENTITY_FIELDS or key in _RENAMED_TOO
    )


def _body(api_key: int, is_request: bool, version: int, frame: memoryview, at: int) -> Any:
    read = read_message(api_key, is_request, version, frame, at, keep_tagged=True)
    assert read is not None
    return read


@pytest.mark.parametrize(("api_key", "version"), _pairs(True))
@settings(max_examples=5, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data())
def test_a_request_renamed_for_its_tenant_and_back_is_the_original(
    api_key: int, version: int, data: Any
) -> None:
    cls = kio_message_class(api_key, version, "request")
    assert cls is not None
    message = data.draw(message_strategy(cls))
    frame = memoryview(encode_request_frame(message, 3, "tenant-app"))[4:]
    hdr = parse_request_header(frame)
    try:
        renamed = b"".join(to_cluster(TEAM_A, hdr, frame).pieces)
    except TenantRefusal:
        # Only a config resource of the cluster's own (a broker's, a logger's) is refused.
        assert api_key in CONFIG_RESOURCE_APIS
        assert any(int(r.resource_type) not in (2, 32) for r in message.resources)
        return
    assert renamed[: hdr.body_offset] == frame[: hdr.body_offset]  # the header as it came
    cluster_view = decode_body(cls, bytes(renamed[hdr.body_offset :]))
    prefixed = Counter((kind, "team-a." + name) for kind, name in kio_named(message))
    assert Counter(kio_named(cluster_view)) == prefixed
    layout, value = _body(api_key, True, version, memoryview(renamed), hdr.body_offset)
    rename(api_key, layout, value, TEAM_A.to_tenant)
    back = LayoutWriter(is_flexible(api_key, version), 1 << 20).write(layout, value)
    assert back == bytes(frame[hdr.body_offset :])


@pytest.mark.parametrize(("api_key", "version"), _pairs(False))
@settings(max_examples=5, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data())
def test_a_response_reaches_a_tenant_with_only_its_own_names(
    api_key: int, version: int, data: Any
) -> None:
    cls = kio_message_class(api_key, version, "response")
    assert cls is not None
    message = data.draw(message_strategy(cls))
    flexible = is_flexible(api_key, version)
    body = memoryview(encode_body(message))
    # Each name the cluster's, of team-a or team-b by the name itself.
    owners: dict[str, str] = {}

    def to_cluster_of_either(kind: str, name: str) -> str:
        if kind == MESSAGE or not name:
            return name
        tenant = TEAM_A if len(name) % 2 else TEAM_B
        owners[name] = tenant.name
        return tenant.to_cluster(kind, name)

    layout, value = _body(api_key, False, version, body, 0)
    rename(api_key, layout, value, to_cluster_of_either)
    mixed = LayoutWriter(flexible, 1 << 20).write(layout, value)
    layout, value = _body(api_key, False, version, memoryview(mixed), 0)
    rename(api_key, layout, value, TEAM_A.to_tenant)
    seen = decode_body(cls, LayoutWriter(flexible, 1 << 20).write(layout, value))
    for _kind, name in kio_named(seen):
        assert owners.get(name) == "team-a", (name, owners)
    if set(owners.values()) <= {"team-a"}:  # all of it team-a's: all of it, as it was
        assert seen == message
