"""kproxy's walker and rewriter against kio, an independent codec (issue 2).

For every endpoint- or leadership-bearing (api, kind, version) that kio 0.6.5 has
(``ENDPOINT_MESSAGES``), random kio messages are encoded by kio and then:

* the walker must find exactly the endpoints (path, node id, listener, host, port, rack)
  and partition leaders that kio's object holds;
* after a rewrite with random hosts (0-300 characters of any unicode) and ports (the
  full range of the field: uint16 or int32), kio must decode the result and see the
  message with only those addresses changed;
* after a rewrite that cannot map some node ids (or listener names), kio must decode
  the result and the unmappable endpoints must be gone from their arrays, except in
  FindCoordinator, where the entry stays as COORDINATOR_NOT_AVAILABLE (15) with an
  empty host, and UpdateRaftVoterResponse.CurrentLeader, whose address is emptied.

One test per (api, kind, version), with the example count of the hypothesis profile
(``HYPOTHESIS_PROFILE=ci``: 200, see conftest.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproxy.protocol.headers import parse_request_header, parse_response_header
from kproxy.protocol.plan import PLANS
from kproxy.protocol.rewriter import rewrite
from kproxy.protocol.walker import Endpoint, LeaderObservation, WalkResult, walk
from tests.kio_expected import (
    ExpectedEndpoint,
    ExpectedLeader,
    apply_mapping,
    expected_endpoints,
    expected_leaders,
    kio_path,
    replace_endpoints,
)
from tests.kio_strategies import message_strategy
from tests.kio_support import (
    ENDPOINT_MESSAGES,
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    kio_message_class,
    response_header_version,
)

CASES = [(key, kind, v) for key, kind, versions in ENDPOINT_MESSAGES for v in versions]
FIND_COORDINATOR = 10
# Messages whose per-partition CurrentLeader is a *tagged* field, with its default: a
# tagged struct equal to its default is not on the wire, and then the walker reports no
# hint (None, None, hint=False) where kio's decoded object holds the default.
TAGGED_CURRENT_LEADER = {
    0: (-1, -1),  # ProduceResponse v10+ (KIP-951)
    1: (-1, -1),  # FetchResponse v12+ (KIP-951)
    59: (0, 0),  # FetchSnapshotResponse: LeaderId/LeaderEpoch have no JSON default
}

HOSTS = st.text(max_size=300)
PORTS = {2: st.integers(0, 0xFFFF), 4: st.integers(-(2**31), 2**31 - 1)}

EndpointKey = tuple[str, int | None, str | None, str, int, str | None]
Target = tuple[str, int]


# --------------------------------------------------------------------------- helpers


def endpoint_key(ep: Endpoint | ExpectedEndpoint) -> EndpointKey:
    path = kio_path(ep.path) if isinstance(ep, Endpoint) else ep.path
    return (path, ep.node_id, ep.listener, ep.host, ep.port, ep.rack)


def leader_key(obs: LeaderObservation) -> tuple[Any, ...]:
    topic_id = None
    if obs.topic_id is not None and obs.topic_id != bytes(16):  # kio reads zero as None
        topic_id = uuid.UUID(bytes=obs.topic_id)
    return (
        obs.topic,
        topic_id,
        obs.partition,
        obs.error_code,
        obs.leader_id,
        obs.leader_epoch,
        obs.hint,
    )


def expected_leader_key(api_key: int, exp: ExpectedLeader) -> tuple[Any, ...]:
    leader_id, leader_epoch, hint = exp.leader_id, exp.leader_epoch, exp.hint
    default = TAGGED_CURRENT_LEADER.get(api_key)
    if hint and default is not None and (leader_id, leader_epoch) == default:
        leader_id, leader_epoch, hint = None, None, False  # default: not on the wire
    return (exp.topic, exp.topic_id, exp.partition, exp.error_code, leader_id, leader_epoch, hint)


def encode(msg: Any, kind: str) -> tuple[bytes, int]:
    """The wire frame (size prefix included) and the body offset inside frame[4:]."""
    if kind == "request":
        wire = encode_request_frame(msg, 0x1234, "kproxy-test")
        header = parse_request_header(memoryview(wire)[4:])
        assert header.known and header.client_id == "kproxy-test"
        return wire, header.body_offset
    wire = encode_response_frame(msg, 0x1234)
    corr, offset = parse_response_header(memoryview(wire)[4:], response_header_version(type(msg)))
    assert corr == 0x1234
    return wire, offset


def decode(cls: type, kind: str, wire: bytes) -> Any:
    if kind == "request":
        return decode_request_frame(wire)[4]
    return decode_response_frame(cls, wire)[1]


def check_chunks(wire: bytes, chunks: list[bytes | memoryview], size: int) -> bytes:
    """Chunks: new size prefix, then new bytes or views of the input frame. Returns the join."""
    assert isinstance(chunks[0], bytes) and len(chunks[0]) == 4
    for chunk in chunks[1:]:
        assert isinstance(chunk, bytes) or (isinstance(chunk, memoryview) and chunk.obj is wire)
    out = b"".join(bytes(c) for c in chunks)
    assert len(out) == size + 4 and int.from_bytes(out[:4], "big", signed=True) == size
    return out


# --------------------------------------------------------------------------- inventory


# DescribeConfigs answers carry configuration entries, not endpoints or leaders: their
# property test against kio is tests/session/test_session_configs.py.
CONFIG_ENTRY_MESSAGES = {(32, "response")}


def test_every_walked_plan_kio_has_is_covered() -> None:
    """Each (api, kind, version) kproxy walks and kio can encode is property-tested."""
    covered = set(CASES)
    for key, is_request, version in PLANS:
        kind = "request" if is_request else "response"
        if (key, kind) in CONFIG_ENTRY_MESSAGES:
            continue
        if kio_message_class(key, version, kind) is not None:
            assert (key, kind, version) in covered


def test_case_count() -> None:
    assert len(CASES) == 97


# --------------------------------------------------------------------------- properties


@pytest.mark.parametrize(("api_key", "kind", "version"), CASES, ids=lambda x: str(x))
def test_walker_and_rewriter_agree_with_kio(api_key: int, kind: str, version: int) -> None:
    cls = kio_message_class(api_key, version, kind)
    assert cls is not None
    is_request = kind == "request"

    @given(msg=message_strategy(cls), data=st.data())
    def check(msg: Any, data: st.DataObject) -> None:
        wire, offset = encode(msg, kind)
        frame = memoryview(wire)[4:]
        found = walk(frame, offset, api_key, version, is_request)
        assert found.end == len(frame)

        # 1. The walker sees exactly what kio sees.
        assert [endpoint_key(e) for e in found.endpoints] == [
            endpoint_key(e) for e in expected_endpoints(msg)
        ]
        want_leaders = [expected_leader_key(api_key, x) for x in expected_leaders(msg)]
        assert [leader_key(x) for x in found.leaders] == want_leaders

        # 2. Rewrite every endpoint to a random address of the right port width.
        targets: dict[EndpointKey, Target] = {}
        for ep in found.endpoints:
            k = endpoint_key(ep)
            if k not in targets:
                targets[k] = (data.draw(HOSTS, "host"), data.draw(PORTS[ep.port_width], "port"))
        result = rewrite(frame, found.endpoints, lambda ep: targets[endpoint_key(ep)])
        assert result.removed == []
        changed = [ep for ep in found.endpoints if targets[endpoint_key(ep)] != (ep.host, ep.port)]
        assert result.rewritten == changed
        new_wire = check_chunks(wire, result.chunks, result.size)
        want = replace_endpoints(msg, lambda ep: targets[endpoint_key(ep)])
        assert decode(cls, kind, new_wire) == want
        again = walk(memoryview(new_wire)[4:], offset, api_key, version, is_request)
        assert again.end == len(new_wire) - 4
        assert [(e.host, e.port) for e in again.endpoints] == [
            targets[endpoint_key(e)] for e in found.endpoints
        ]
        assert [leader_key(x) for x in again.leaders] == want_leaders

        # 3. Some node ids (and listener names, for endpoints without a node id) cannot
        #    be mapped: their endpoints must not reach the peer.
        ids = sorted({e.node_id for e in found.endpoints if e.node_id is not None})
        names = sorted(
            {e.listener for e in found.endpoints if e.node_id is None and e.listener is not None}
        )
        drop_ids = data.draw(st.sets(st.sampled_from(ids)), "drop ids") if ids else set()
        drop_names = data.draw(st.sets(st.sampled_from(names)), "drop names") if names else set()
        if not drop_ids and not drop_names:
            return

        def unmapped(ep: Endpoint | ExpectedEndpoint) -> bool:
            if ep.node_id is not None:
                return ep.node_id in drop_ids
            return ep.listener in drop_names

        def partial(ep: Endpoint | ExpectedEndpoint) -> Target | None:
            return None if unmapped(ep) else targets[endpoint_key(ep)]

        result = rewrite(frame, found.endpoints, partial)
        assert result.removed == [ep for ep in found.endpoints if unmapped(ep)]
        new_wire = check_chunks(wire, result.chunks, result.size)
        assert decode(cls, kind, new_wire) == apply_mapping(msg, partial)
        again = walk(memoryview(new_wire)[4:], offset, api_key, version, is_request)
        _check_removed(api_key, found, again, unmapped, targets)
        assert [leader_key(x) for x in again.leaders] == want_leaders

    check()


def _check_removed(
    api_key: int,
    before: WalkResult,
    after: WalkResult,
    unmapped: Callable[[Endpoint], bool],
    targets: dict[EndpointKey, Target],
) -> None:
    if api_key == FIND_COORDINATOR:
        # Entries stay, answering COORDINATOR_NOT_AVAILABLE with no address.
        assert len(after.endpoints) == len(before.endpoints)
        for old, new in zip(before.endpoints, after.endpoints, strict=True):
            if unmapped(old):
                assert (new.host, new.port) == ("", -1)
            else:
                assert (new.host, new.port) == targets[endpoint_key(old)]
        return
    if after.endpoints and after.endpoints[0].array is None:
        # Not in an array (UpdateRaftVoterResponse.CurrentLeader): the address is emptied.
        assert len(after.endpoints) == len(before.endpoints)
        for old, new in zip(before.endpoints, after.endpoints, strict=True):
            want = ("", 0) if unmapped(old) else targets[endpoint_key(old)]
            assert (new.host, new.port) == want
        return
    kept = [targets[endpoint_key(e)] for e in before.endpoints if not unmapped(e)]
    assert [(e.host, e.port) for e in after.endpoints] == kept
