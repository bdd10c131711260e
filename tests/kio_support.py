"""Test support around the independent Kafka codec ``kio`` (PyPI ``kio==0.6.5``).

kproxy itself never imports this module.  It lets the test suite use kio, which is
generated from the Kafka 4.3 message schemas, as an *independent oracle*: to build golden
vectors, to generate random valid messages with hypothesis, and to compute, without any
kproxy code, which broker endpoints and partition leaders a message carries.

kio facts this module relies on (checked against kio 0.6.5):

* One frozen, slotted, ``kw_only`` dataclass per (api, version, kind), in
  ``kio/schema/<api_name>/v<N>/request.py|response.py``; looked up with
  ``kio.index.load_request_schema`` / ``load_response_schema``.  Every class carries
  ``__api_key__``, ``__version__``, ``__flexible__`` and ``__header_schema__``.
* Attribute names are snake_case versions of the schema names (``NodeId`` -> ``node_id``,
  ``KRaftVersionFeature`` -> ``k_raft_version_feature``).  Each field's
  ``metadata["kafka_type"]`` is the wire type (``int32``, ``uint16``, ``string``,
  ``error_code``, ``timedelta_i32`` ...); tagged fields also have ``metadata["tag"]``.
* Arrays are ``tuple[T, ...]``, nullable fields ``T | None``.  EVERY ``uuid`` field is typed
  ``UUID | None``: ``None`` is written as the all-zero uuid and the all-zero uuid is read
  back as ``None``.  So ``uuid.UUID(int=0)`` never survives a round trip.
* ``error_code`` fields are ``kio.schema.errors.ErrorCode`` (an ``IntEnum``); decoding an
  error code that kio does not know raises ``ValueError``.
* Millisecond fields: ``timedelta_i32``/``timedelta_i64`` are ``datetime.timedelta``
  (``timedelta_i64`` fails above about 9.2e15 ms because of ``timedelta`` limits),
  ``datetime_i64`` is an aware ``datetime`` (``-1`` is ``None`` when nullable).  Plain
  ``int64`` fields (offsets, ``last_fetch_timestamp``...) stay ``int``.
* ``kio.serial.entity_writer(cls)(buffer, obj)`` writes a body; the reader
  ``kio.serial.entity_reader(cls)(data, offset)`` returns ``(obj, end_offset)`` and raises
  ``kio.serial.errors.DecodeError`` subclasses (``BufferUnderflow``) on short input.
  Constructors do not validate: plain ``int``/``str`` values are accepted everywhere.
* kio's own header classes (``kio.schema.request_header.v1/v2``,
  ``kio.schema.response_header.v0/v1``) are used for frames; kio special-cases
  ``RequestHeader.client_id`` to the classic int16-length string, as Kafka does.

Hypothesis strategies for kio's messages are ``tests/kio_strategies.py``'s; the endpoints
and leaders a message carries, ``tests/kio_expected.py``'s.
"""

from __future__ import annotations

import datetime
import io
import struct
import uuid
from typing import Any, Literal

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

__all__ = [
    "API_VERSIONS_KEY",
    "ENDPOINT_MESSAGES",
    "decode_body",
    "decode_request_frame",
    "decode_response_frame",
    "encode_body",
    "encode_request_frame",
    "encode_response_frame",
    "kio_message_class",
    "kio_versions",
    "request_header_version",
    "response_header_version",
]

Kind = Literal["request", "response"]

API_VERSIONS_KEY = 18

_ENTITY_TYPES: dict[str, EntityType] = {
    "request": EntityType.request,
    "response": EntityType.response,
}


# --------------------------------------------------------------------------- lookup


def kio_message_class(api_key: int, version: int, kind: Kind) -> type | None:
    """The kio dataclass of (api_key, version, kind), or None when kio does not have it."""
    if kind not in _ENTITY_TYPES:
        raise ValueError(f"kind must be 'request' or 'response', not {kind!r}")
    loader = load_request_schema if kind == "request" else load_response_schema
    try:
        return loader(api_key, version)
    except KioIndexError:
        return None


def kio_versions(api_key: int, kind: Kind) -> range:
    """The versions of (api_key, kind) that kio has, as a range (empty if none).

    Raises if kio's versions are not contiguous (never the case in kio 0.6.5).
    """
    name = api_key_map.get(api_key)
    if name is None:
        return range(0)
    entity_type = _ENTITY_TYPES[kind]
    versions = sorted(v for v, types_ in schema_name_map[name].items() if entity_type in types_)
    if not versions:
        return range(0)
    result = range(versions[0], versions[-1] + 1)
    if list(result) != versions:
        raise AssertionError(f"kio versions of {name} {kind} are not contiguous: {versions}")
    return result


# Messages that carry broker/controller endpoints or partition leadership
# (docs/protocol.md §1-§2), with the versions kio 0.6.5 actually has.
_ENDPOINT_RESPONSE_KEYS = (3, 10, 60, 0, 1, 78, 79, 52, 53, 54, 59, 55, 82, 2, 23, 75, 56)
_ENDPOINT_REQUEST_KEYS = (53, 54, 80, 82, 62, 70)

ENDPOINT_MESSAGES: list[tuple[int, str, range]] = [
    (key, "response", kio_versions(key, "response")) for key in _ENDPOINT_RESPONSE_KEYS
] + [(key, "request", kio_versions(key, "request")) for key in _ENDPOINT_REQUEST_KEYS]


# --------------------------------------------------------------------------- bodies


def encode_body(msg: Any) -> bytes:
    """Serialize a kio message body (no size, no header)."""
    buffer = io.BytesIO()
    entity_writer(type(msg))(buffer, msg)
    return buffer.getvalue()


def decode_body(cls: type, data: bytes) -> Any:
    """Parse a whole body with kio; raises ValueError if bytes are left over."""
    msg, end = entity_reader(cls)(data, 0)
    if end != len(data):
        raise ValueError(
            f"{cls.__module__}.{cls.__name__}: {len(data) - end} trailing byte(s) "
            f"after the body (consumed {end} of {len(data)})"
        )
    return msg


# --------------------------------------------------------------------------- frames


def request_header_version(cls: type) -> int:
    """Request header version for a kio request class: 2 if flexible, else 1."""
    return 2 if cls.__flexible__ else 1


def response_header_version(cls: type) -> int:
    """Response header version: 1 if flexible, else 0; ApiVersions (18) is always 0."""
    if cls.__api_key__ == API_VERSIONS_KEY:
        return 0
    return 1 if cls.__flexible__ else 0


def request_header_class(cls: type) -> type:
    """kio's RequestHeader class for a kio request class (:func:`request_header_version`)."""
    return RequestHeaderV2 if request_header_version(cls) == 2 else RequestHeaderV1


def response_header_class(cls: type) -> type:
    """kio's ResponseHeader class for a kio response class (:func:`response_header_version`)."""
    return ResponseHeaderV0 if response_header_version(cls) == 0 else ResponseHeaderV1


def _check_kind(msg: Any, kind: Kind) -> None:
    if getattr(type(msg), "__type__", None) != _ENTITY_TYPES[kind]:
        raise TypeError(f"expected a kio {kind} message, got {type(msg).__qualname__}")


def _write_entity(obj: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(obj))(buffer, obj)
    return buffer.getvalue()


def encode_response_frame(msg: Any, correlation_id: int) -> bytes:
    """int32 size + response header (v0 or v1, see :func:`response_header_version`) + body.

    The header is written with kio's own ResponseHeader v0/v1 classes.
    """
    _check_kind(msg, "response")
    header = _write_entity(response_header_class(type(msg))(correlation_id=correlation_id))
    payload = header + encode_body(msg)
    return struct.pack(">i", len(payload)) + payload


def encode_request_frame(msg: Any, correlation_id: int, client_id: str | None) -> bytes:
    """int32 size + request header (v1, or v2 when flexible) + body.

    The header is written with kio's own RequestHeader v1/v2 classes (client_id always uses
    the classic int16-length nullable string; v2 adds an empty tagged section).
    """
    _check_kind(msg, "request")
    cls = type(msg)
    header = _write_entity(
        request_header_class(cls)(
            request_api_key=cls.__api_key__,
            request_api_version=cls.__version__,
            correlation_id=correlation_id,
            client_id=client_id,
        )
    )
    payload = header + encode_body(msg)
    return struct.pack(">i", len(payload)) + payload


def fetch_from_start(fetch: Any) -> Any:
    """Partition 0 from offset 0, as much as there is, in the FetchPartition of the kio
    Fetch request module `fetch` (any version with topic ids)."""
    return fetch.FetchPartition(
        partition=0,
        current_leader_epoch=-1,
        fetch_offset=0,
        last_fetched_epoch=-1,
        log_start_offset=-1,
        partition_max_bytes=1 << 30,
    )


def fetch_v17_request(correlation_id: int, topic_id: uuid.UUID, client_id: str) -> bytes:
    """A consumer's Fetch v17 of partition 0 of `topic_id` from offset 0, answered at
    once with everything there is (no wait, no size limit worth the name)."""
    from kio.schema.fetch.v17 import request as fetch

    partition = fetch_from_start(fetch)
    msg = fetch.FetchRequest(
        cluster_id=None,
        replica_state=fetch.ReplicaState(replica_id=-1, replica_epoch=-1),
        max_wait=datetime.timedelta(0),
        min_bytes=1,
        max_bytes=1 << 30,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(fetch.FetchTopic(topic_id=topic_id, partitions=(partition,)),),
        forgotten_topics_data=(),
        rack_id="",
    )
    return encode_request_frame(msg, correlation_id, client_id)


def _unframe(frame: bytes) -> bytes:
    if len(frame) < 4:
        raise ValueError("frame shorter than its 4-byte size prefix")
    (size,) = struct.unpack_from(">i", frame)
    if size != len(frame) - 4:
        raise ValueError(f"size prefix says {size} bytes, frame has {len(frame) - 4}")
    return frame[4:]


def decode_response_frame(cls: type, frame: bytes) -> tuple[int, Any]:
    """Inverse of :func:`encode_response_frame`: returns (correlation_id, msg)."""
    payload = _unframe(frame)
    header, offset = entity_reader(response_header_class(cls))(payload, 0)
    return header.correlation_id, decode_body(cls, payload[offset:])


def decode_request_frame(frame: bytes) -> tuple[int, int, int, str | None, Any]:
    """Inverse of :func:`encode_request_frame`.

    Returns (api_key, api_version, correlation_id, client_id, msg); the kio class is looked
    up from the header's api key and version.
    """
    payload = _unframe(frame)
    api_key, version = struct.unpack_from(">hh", payload)
    cls = kio_message_class(api_key, version, "request")
    if cls is None:
        raise ValueError(f"kio has no request class for api key {api_key} v{version}")
    header, offset = entity_reader(request_header_class(cls))(payload, 0)
    msg = decode_body(cls, payload[offset:])
    return api_key, version, header.correlation_id, header.client_id, msg


def sample_metadata_v12() -> object:
    """A Metadata v12 response built by kio: two brokers (one with a rack), a topic with
    a topic id, a partition with a leader and one without (LEADER_NOT_AVAILABLE)."""
    from kio.schema.metadata.v12.response import (
        MetadataResponse,
        MetadataResponseBroker,
        MetadataResponsePartition,
        MetadataResponseTopic,
    )

    topic_id = uuid.UUID("12345678-1234-5678-1234-567812345678")
    return MetadataResponse(
        throttle_time=datetime.timedelta(0),
        brokers=(
            MetadataResponseBroker(node_id=1, host="b1.internal", port=9092, rack="r1"),
            MetadataResponseBroker(node_id=2, host="b2.internal", port=9093),
        ),
        cluster_id="c",
        controller_id=1,
        topics=(
            MetadataResponseTopic(
                error_code=ErrorCode.none,
                name="t",
                topic_id=topic_id,
                partitions=(
                    MetadataResponsePartition(
                        error_code=ErrorCode.none, partition_index=0, leader_id=2, leader_epoch=5
                    ),
                    MetadataResponsePartition(
                        error_code=ErrorCode.leader_not_available,
                        partition_index=1,
                        leader_id=-1,
                        leader_epoch=7,
                    ),
                ),
            ),
        ),
    )
