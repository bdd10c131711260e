"""Smoke tests for tests/kio_support.py (the kio-based independent oracle)."""

from __future__ import annotations

import dataclasses
import datetime
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from tests.kio_expected import (
    ExpectedEndpoint,
    expected_endpoints,
    expected_leaders,
    replace_endpoints,
)
from tests.kio_strategies import message_strategy
from tests.kio_support import (
    ENDPOINT_MESSAGES,
    decode_body,
    decode_request_frame,
    decode_response_frame,
    encode_body,
    encode_request_frame,
    encode_response_frame,
    kio_message_class,
    sample_metadata_v12,
)

SMOKE = settings(
    max_examples=10,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
ZERO = datetime.timedelta(0)

ALL_CASES = [
    (key, kind, version) for key, kind, versions in ENDPOINT_MESSAGES for version in versions
]


def _remap(endpoint: ExpectedEndpoint) -> tuple[str, int]:
    return f"proxy-{endpoint.node_id}.example", (endpoint.port + 1) % 65536


# --------------------------------------------------------------------------- inventory


def test_endpoint_messages_versions_match_kio() -> None:
    table = {(key, kind): versions for key, kind, versions in ENDPOINT_MESSAGES}
    assert len(table) == len(ENDPOINT_MESSAGES) == 23
    assert table[(3, "response")] == range(0, 14)
    assert table[(0, "response")] == range(3, 14)
    assert table[(1, "response")] == range(4, 19)
    assert table[(10, "response")] == range(0, 7)
    assert table[(78, "response")] == range(1, 3)
    assert table[(82, "response")] == range(0, 1)
    assert table[(62, "request")] == range(0, 5)
    for (key, kind), versions in table.items():
        assert len(versions) > 0
        assert kio_message_class(key, versions.start - 1, kind) is None  # type: ignore[arg-type]
        assert kio_message_class(key, versions.stop, kind) is None  # type: ignore[arg-type]


def test_kio_message_class_lookup() -> None:
    from kio.schema.metadata.v12.response import MetadataResponse

    assert kio_message_class(3, 12, "response") is MetadataResponse
    assert kio_message_class(3, 99, "response") is None
    assert kio_message_class(4, 0, "request") is None  # LeaderAndIsr: removed, not in kio
    assert kio_message_class(9999, 0, "request") is None


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize(("key", "kind", "version"), ALL_CASES)
def test_random_messages_round_trip(key: int, kind: str, version: int) -> None:
    cls = kio_message_class(key, version, kind)  # type: ignore[arg-type]
    assert cls is not None

    @SMOKE
    @given(message_strategy(cls))
    def check(msg: object) -> None:
        body = encode_body(msg)
        assert decode_body(cls, body) == msg
        if kind == "response":
            assert decode_response_frame(cls, encode_response_frame(msg, 7)) == (7, msg)
        else:
            frame = encode_request_frame(msg, 7, "cid")
            assert decode_request_frame(frame) == (key, version, 7, "cid", msg)
        endpoints = expected_endpoints(msg)
        expected_leaders(msg)
        rewritten = replace_endpoints(msg, _remap)
        assert decode_body(cls, encode_body(rewritten)) == rewritten
        after = expected_endpoints(rewritten)
        assert [(e.path, e.node_id, e.listener, e.rack) for e in after] == [
            (e.path, e.node_id, e.listener, e.rack) for e in endpoints
        ]
        assert [(e.host, e.port) for e in after] == [_remap(e) for e in endpoints]
        assert expected_leaders(rewritten) == expected_leaders(msg)

    check()


def test_decode_body_rejects_trailing_bytes() -> None:
    from kio.schema.metadata.v12.response import MetadataResponse

    msg = MetadataResponse(throttle_time=ZERO, brokers=(), topics=())
    body = encode_body(msg)
    assert decode_body(MetadataResponse, body) == msg
    with pytest.raises(ValueError, match="trailing"):
        decode_body(MetadataResponse, body + b"\x00")


@SMOKE
@given(st.data())
def test_strategy_draws_nullable_and_tagged_defaults(data: st.DataObject) -> None:
    from kio.schema.produce.v10.response import PartitionProduceResponse

    part = data.draw(message_strategy(PartitionProduceResponse))
    assert isinstance(part, PartitionProduceResponse)
    assert -(2**31) <= part.index < 2**31
    assert len(part.record_errors) <= 5


# --------------------------------------------------------------------------- frames


def test_api_versions_v3_response_uses_header_v0() -> None:
    from kio.schema.api_versions.v3.response import ApiVersion, ApiVersionsResponse

    msg = ApiVersionsResponse(
        error_code=ErrorCode.none,
        api_keys=(ApiVersion(api_key=18, min_version=0, max_version=4),),
        throttle_time=ZERO,
    )
    assert type(msg).__flexible__
    frame = encode_response_frame(msg, 42)
    body = bytes.fromhex("0000 02 0012 0000 0004 00 00000000 00")
    assert encode_body(msg) == body
    assert frame == struct.pack(">i", 4 + len(body)) + struct.pack(">i", 42) + body
    assert decode_response_frame(ApiVersionsResponse, frame) == (42, msg)


def test_flexible_response_uses_header_v1() -> None:
    msg = sample_metadata_v12()
    frame = encode_response_frame(msg, 0x01020304)
    body = encode_body(msg)
    assert frame == struct.pack(">i", 5 + len(body)) + bytes.fromhex("01020304 00") + body


def test_non_flexible_response_uses_header_v0() -> None:
    from kio.schema.metadata.v8.response import MetadataResponse

    msg = MetadataResponse(throttle_time=ZERO, brokers=(), topics=())
    body = encode_body(msg)
    assert encode_response_frame(msg, 1) == struct.pack(">ii", 4 + len(body), 1) + body


def test_request_frames_header_v1_and_v2() -> None:
    from kio.schema.api_versions.v0.request import ApiVersionsRequest as V0
    from kio.schema.api_versions.v3.request import ApiVersionsRequest as V3

    v0 = encode_request_frame(V0(), 7, "c")
    assert v0 == bytes.fromhex("0000000b 0012 0000 00000007 0001 63")
    v3 = encode_request_frame(V3(client_software_name="k", client_software_version="1"), 7, None)
    # header v2: client id stays a classic int16 string (null = ffff), then empty tags (00)
    assert v3 == bytes.fromhex("00000010 0012 0003 00000007 ffff 00 026b 0231 00")
    assert decode_request_frame(v3)[:4] == (18, 3, 7, None)
    with pytest.raises(TypeError):
        encode_request_frame(sample_metadata_v12(), 1, None)
    with pytest.raises(TypeError):
        encode_response_frame(V0(), 1)


def test_expected_types_are_frozen() -> None:
    endpoint = ExpectedEndpoint("", None, None, "h", 1, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        endpoint.host = "x"  # type: ignore[misc]
