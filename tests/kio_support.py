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
* kio does not ship ready-made hypothesis strategies for messages; ``st.from_type`` works on
  the dataclasses (the primitive types have ``__hypothesis_hook__``), but with unbounded
  sizes and arbitrary error codes, so :func:`message_strategy` builds its own.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import io
import struct
import types
import typing
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Literal

from hypothesis import strategies as st
from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_datetime_i64
from kio.static.constants import EntityType

__all__ = [
    "API_VERSIONS_KEY",
    "ENDPOINT_MESSAGES",
    "ExpectedEndpoint",
    "ExpectedLeader",
    "decode_body",
    "decode_request_frame",
    "decode_response_frame",
    "encode_body",
    "encode_request_frame",
    "encode_response_frame",
    "expected_endpoints",
    "expected_leaders",
    "kio_message_class",
    "kio_versions",
    "message_strategy",
    "replace_endpoints",
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
    if response_header_version(type(msg)) == 0:
        header = _write_entity(ResponseHeaderV0(correlation_id=correlation_id))
    else:
        header = _write_entity(ResponseHeaderV1(correlation_id=correlation_id))
    payload = header + encode_body(msg)
    return struct.pack(">i", len(payload)) + payload


def encode_request_frame(msg: Any, correlation_id: int, client_id: str | None) -> bytes:
    """int32 size + request header (v1, or v2 when flexible) + body.

    The header is written with kio's own RequestHeader v1/v2 classes (client_id always uses
    the classic int16-length nullable string; v2 adds an empty tagged section).
    """
    _check_kind(msg, "request")
    cls = type(msg)
    header_cls = RequestHeaderV2 if request_header_version(cls) == 2 else RequestHeaderV1
    header = _write_entity(
        header_cls(
            request_api_key=cls.__api_key__,
            request_api_version=cls.__version__,
            correlation_id=correlation_id,
            client_id=client_id,
        )
    )
    payload = header + encode_body(msg)
    return struct.pack(">i", len(payload)) + payload


def fetch_v17_request(correlation_id: int, topic_id: uuid.UUID, client_id: str) -> bytes:
    """A consumer's Fetch v17 of partition 0 of `topic_id` from offset 0, answered at
    once with everything there is (no wait, no size limit worth the name)."""
    from kio.schema.fetch.v17 import request as fetch

    partition = fetch.FetchPartition(
        partition=0,
        current_leader_epoch=-1,
        fetch_offset=0,
        last_fetched_epoch=-1,
        log_start_offset=-1,
        partition_max_bytes=1 << 30,
    )
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
    header_cls = ResponseHeaderV0 if response_header_version(cls) == 0 else ResponseHeaderV1
    header, offset = entity_reader(header_cls)(payload, 0)
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
    header_cls = RequestHeaderV2 if request_header_version(cls) == 2 else RequestHeaderV1
    header, offset = entity_reader(header_cls)(payload, 0)
    msg = decode_body(cls, payload[offset:])
    return api_key, version, header.correlation_id, header.client_id, msg


# --------------------------------------------------------------------------- strategies

_INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}
MAX_ARRAY = 5
MAX_STRING = 20
MAX_BYTES = 32
MAX_TIMEDELTA_I64_MS = 10**12
MAX_DATETIME_MS = 10**13  # about year 2286


def _kio_datetime(ms: int) -> datetime.datetime:
    value, _ = read_datetime_i64(struct.pack(">q", ms), 0)
    return value


# Printable text: letters, digits, punctuation, symbols and spaces (multi-byte UTF-8 included).
_TEXT = st.text(alphabet=st.characters(categories=("L", "N", "P", "S", "Zs")), max_size=MAX_STRING)


def _primitive_strategy(kafka_type: str) -> st.SearchStrategy[Any]:
    if kafka_type in _INT_RANGES:
        low, high = _INT_RANGES[kafka_type]
        return st.integers(low, high)
    if kafka_type == "bool":
        return st.booleans()
    if kafka_type == "string":
        return _TEXT
    if kafka_type in ("bytes", "records"):
        return st.binary(max_size=MAX_BYTES)
    if kafka_type == "uuid":
        # None is kio's spelling of the all-zero uuid (see module docstring).
        return st.one_of(st.none(), st.uuids().filter(lambda u: u.int != 0))
    if kafka_type == "error_code":
        return st.sampled_from(list(ErrorCode))
    if kafka_type == "float64":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kafka_type == "timedelta_i32":
        low, high = _INT_RANGES["int32"]
        return st.integers(low, high).map(lambda ms: datetime.timedelta(milliseconds=ms))
    if kafka_type == "timedelta_i64":
        return st.integers(-MAX_TIMEDELTA_I64_MS, MAX_TIMEDELTA_I64_MS).map(
            lambda ms: datetime.timedelta(milliseconds=ms)
        )
    if kafka_type == "datetime_i64":
        # kio's reader builds the datetime through a float (ms / 1000), which is off by a
        # microsecond for some values; produce exactly what kio would decode so that
        # decode(encode(x)) == x (the wire value is still the drawn ms).
        return st.integers(0, MAX_DATETIME_MS).map(_kio_datetime)
    raise NotImplementedError(f"no strategy for kio kafka_type {kafka_type!r}")


def _split_optional(tp: Any) -> tuple[Any, bool]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1:
            raise NotImplementedError(f"unsupported union {tp!r}")
        return args[0], True
    return tp, False


def _type_strategy(tp: Any, kafka_type: str | None, where: str) -> st.SearchStrategy[Any]:
    inner, optional = _split_optional(tp)
    if typing.get_origin(inner) is tuple:
        args = typing.get_args(inner)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise NotImplementedError(f"{where}: unsupported tuple type {inner!r}")
        item = _type_strategy(args[0], kafka_type, where + "[]")
        strategy: st.SearchStrategy[Any] = st.lists(item, max_size=MAX_ARRAY).map(tuple)
    elif dataclasses.is_dataclass(inner):
        strategy = message_strategy(inner)  # type: ignore[arg-type]
    elif kafka_type is None:
        raise NotImplementedError(f"{where}: no kafka_type metadata for {inner!r}")
    elif kafka_type == "uuid":
        return _primitive_strategy("uuid")  # already includes None
    else:
        strategy = _primitive_strategy(kafka_type)
    return st.one_of(st.none(), strategy) if optional else strategy


@functools.cache
def message_strategy(cls: type) -> st.SearchStrategy[Any]:
    """Random valid instances of a kio message (or nested struct) class.

    Built generically from the dataclass fields and their ``kafka_type`` metadata:
    arrays 0-5 items, strings 0-20 printable characters, integers over the full range of
    their wire type, ``timedelta_i64`` within +-1e12 ms, ``datetime_i64`` in
    [epoch, epoch + 1e13 ms], uuids (``None`` = all-zero), known error codes only,
    nullables sometimes ``None``, bytes/records up to 32 bytes.  Tagged fields that have a
    default take it sometimes, so "tag absent" encodings are covered too.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a kio dataclass")
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in dataclasses.fields(cls):
        where = f"{cls.__qualname__}.{f.name}"
        strategy = _type_strategy(hints[f.name], f.metadata.get("kafka_type"), where)
        if "tag" in f.metadata and f.default is not dataclasses.MISSING:
            strategy = st.one_of(st.just(f.default), strategy)
        kwargs[f.name] = strategy
    return st.builds(cls, **kwargs)


# --------------------------------------------------------------------------- traversal


@dataclasses.dataclass(frozen=True)
class ExpectedEndpoint:
    """One broker/controller endpoint found in a kio message."""

    path: str  # dotted attribute path, "[]" for arrays; "" = the message itself
    node_id: int | None
    listener: str | None
    host: str
    port: int
    rack: str | None


@dataclasses.dataclass(frozen=True)
class ExpectedLeader:
    """Leadership information of one partition-level struct in a kio message."""

    topic: str | None
    topic_id: uuid.UUID | None
    partition: int
    error_code: int | None
    leader_id: int | None
    leader_epoch: int | None
    hint: bool  # True when taken from a ``current_leader`` sub-struct


# Streams application endpoints (KIP-1071) and other non-broker hosts, docs/protocol.md §1.
# ACL host/host_filter, client_host and Envelope client_host_address have no ``port``
# field, so the host+port rule never matches them; only Streams needs excluding.
_NON_BROKER_ENDPOINT_FIELDS = frozenset({"user_endpoint", "partitions_by_user_endpoint"})
_NON_BROKER_API_KEYS = frozenset({88, 89})  # StreamsGroupHeartbeat, StreamsGroupDescribe

_OWN_ID_FIELDS = ("node_id", "broker_id", "leader_id")
_ENCLOSING_ID_FIELDS = ("node_id", "broker_id", "voter_id", "controller_id")
_LISTENER_FIELDS = ("name", "listener")
# Arrays of the *leader's* endpoints in Begin/EndQuorumEpochRequest: an enclosing voter_id
# there is the receiving voter, not the endpoint's owner, so it is not used.
_LEADER_ENDPOINT_ARRAYS = frozenset({"leader_endpoints"})

_PARTITION_FIELDS = ("partition_index", "index", "partition")
_LEADER_MARKER_FIELDS = ("error_code", "leader_id", "leader", "leader_epoch", "current_leader")
_TOPIC_NAME_FIELDS = ("name", "topic", "topic_name")


def _has(obj: Any, name: str) -> bool:
    return any(f.name == name for f in dataclasses.fields(obj))


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _children(obj: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(field name, path, struct) of every dataclass directly below obj, in field order."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    yield f.name, _join(path, f.name) + "[]", item
        elif dataclasses.is_dataclass(value):
            yield f.name, _join(path, f.name), value


def _is_endpoint(obj: Any, excluded: bool) -> bool:
    return not excluded and _has(obj, "host") and _has(obj, "port")


def _endpoint_of(
    obj: Any, path: str, ancestors: tuple[Any, ...], field_names: tuple[str, ...]
) -> ExpectedEndpoint:
    node_id: int | None = None
    for name in _OWN_ID_FIELDS:
        if _has(obj, name):
            node_id = int(getattr(obj, name))
            break
    else:
        if not (field_names and field_names[-1] in _LEADER_ENDPOINT_ARRAYS):
            node_id = _nearest_id(ancestors)
    listener = next(
        (getattr(obj, name) for name in _LISTENER_FIELDS if _has(obj, name)),
        None,
    )
    rack = obj.rack if _has(obj, "rack") else None
    return ExpectedEndpoint(
        path=path,
        node_id=node_id,
        listener=listener,
        host=obj.host,
        port=int(obj.port),
        rack=rack,
    )


def _nearest_id(ancestors: tuple[Any, ...]) -> int | None:
    for ancestor in reversed(ancestors):
        for name in _ENCLOSING_ID_FIELDS:
            if _has(ancestor, name):
                return int(getattr(ancestor, name))
    return None


def _walk(
    obj: Any,
    path: str,
    ancestors: tuple[Any, ...],
    field_names: tuple[str, ...],
    excluded: bool,
) -> Iterator[tuple[Any, str, tuple[Any, ...], tuple[str, ...], bool]]:
    """Pre-order (document order) walk over every struct of a kio message."""
    yield obj, path, ancestors, field_names, excluded
    for name, child_path, child in _children(obj, path):
        yield from _walk(
            child,
            child_path,
            (*ancestors, obj),
            (*field_names, name),
            excluded or name in _NON_BROKER_ENDPOINT_FIELDS,
        )


def _message_excluded(msg: Any) -> bool:
    return getattr(type(msg), "__api_key__", None) in _NON_BROKER_API_KEYS


def expected_endpoints(msg: Any) -> list[ExpectedEndpoint]:
    """Every broker/controller endpoint in a kio message, in document (field) order.

    An endpoint is any struct with both a ``host`` and a ``port`` attribute, except Kafka
    Streams application endpoints (``user_endpoint`` in StreamsGroup* messages, KIP-1071).

    * ``node_id``: the struct's own node_id/broker_id/leader_id, else the nearest enclosing
      struct's node_id/broker_id/voter_id/controller_id, else None.  Exception:
      ``leader_endpoints[]`` (Begin/EndQuorumEpochRequest) always gets None, because the
      request's top-level ``voter_id`` is the *receiving* voter; the leader's id is in
      ``topics[].partitions[].leader_id`` (see :func:`expected_leaders`).
    * ``listener``: the struct's own ``name``/``listener`` field, else None.
    * ``rack``: the struct's own ``rack`` field, else None (BrokerRegistrationRequest's
      top-level ``rack`` is NOT copied into its ``listeners[]``).
    * ``path``: e.g. ``brokers[]``, ``nodes[].listeners[]``, ``current_leader``, or ``""``
      for FindCoordinator v0-3 whose top-level struct has host/port.
    """
    excluded = _message_excluded(msg)
    return [
        _endpoint_of(obj, path, ancestors, names)
        for obj, path, ancestors, names, skip in _walk(msg, "", (), (), excluded)
        if _is_endpoint(obj, skip)
    ]


def _topic_of(obj: Any, ancestors: tuple[Any, ...]) -> tuple[str | None, uuid.UUID | None]:
    for candidate in (obj, *reversed(ancestors)):
        names = [n for n in (*_TOPIC_NAME_FIELDS, "topic_id") if _has(candidate, n)]
        if not names:
            continue
        topic = next(
            (
                getattr(candidate, n)
                for n in _TOPIC_NAME_FIELDS
                if _has(candidate, n) and isinstance(getattr(candidate, n), str | None)
            ),
            None,
        )
        topic_id = candidate.topic_id if _has(candidate, "topic_id") else None
        return topic, topic_id
    return None, None


def _partition_of(obj: Any) -> int | None:
    for name in _PARTITION_FIELDS:
        if _has(obj, name):
            value = getattr(obj, name)
            if isinstance(value, int) and not isinstance(value, bool):
                return int(value)
    return None


def expected_leaders(msg: Any) -> list[ExpectedLeader]:
    """One entry per partition-level struct, in document order.

    A partition-level struct has an int ``partition_index``/``index``/``partition`` field
    and at least one of error_code / leader_id / leader / leader_epoch / current_leader.

    * leader_id / leader_epoch come from the struct's own ``leader_id`` (or ``leader``) and
      ``leader_epoch`` fields (``hint=False``; a missing one is None, e.g. ListOffsets has
      only leader_epoch).  If the struct has neither but has a ``current_leader``
      sub-struct, they come from it with ``hint=True``, ALWAYS, even when it holds the
      default (-1, -1) that Produce/Fetch do not put on the wire.
    * topic / topic_id: from the partition struct itself if it has ``name``/``topic``/
      ``topic_name``/``topic_id``, else from the nearest enclosing struct that has any.
      kio reads an all-zero topic id as None.
    * error_code: the struct's own ``error_code`` as int, else None.
    """
    result: list[ExpectedLeader] = []
    for obj, _path, ancestors, _names, _skip in _walk(msg, "", (), (), False):
        partition = _partition_of(obj)
        if partition is None or not any(_has(obj, n) for n in _LEADER_MARKER_FIELDS):
            continue
        own_leader = next((n for n in ("leader_id", "leader") if _has(obj, n)), None)
        hint = False
        leader_id = _int_or_none(getattr(obj, own_leader)) if own_leader else None
        leader_epoch = _int_or_none(obj.leader_epoch) if _has(obj, "leader_epoch") else None
        if own_leader is None and not _has(obj, "leader_epoch") and _has(obj, "current_leader"):
            current = obj.current_leader
            if current is not None:
                leader_id = _int_or_none(current.leader_id)
                leader_epoch = _int_or_none(current.leader_epoch)
                hint = True
        topic, topic_id = _topic_of(obj, ancestors)
        error_code = _int_or_none(obj.error_code) if _has(obj, "error_code") else None
        result.append(
            ExpectedLeader(
                topic=topic,
                topic_id=topic_id,
                partition=partition,
                error_code=error_code,
                leader_id=leader_id,
                leader_epoch=leader_epoch,
                hint=hint,
            )
        )
    return result


def _port_range(obj: Any) -> tuple[int, int]:
    kafka_type = next(f for f in dataclasses.fields(obj) if f.name == "port").metadata.get(
        "kafka_type", "int32"
    )
    return _INT_RANGES.get(kafka_type, _INT_RANGES["int32"])


def replace_endpoints(msg: Any, new: Callable[[ExpectedEndpoint], tuple[str, int]]) -> Any:
    """A copy of msg with every endpoint's (host, port) replaced by ``new(endpoint)``.

    Endpoints are exactly those of :func:`expected_endpoints` (same paths and node ids,
    computed on the original message); everything else is unchanged.  Raises ValueError
    if a new port does not fit the field's wire type (uint16 or int32).
    """

    def rebuild(
        obj: Any,
        path: str,
        ancestors: tuple[Any, ...],
        field_names: tuple[str, ...],
        excluded: bool,
    ) -> Any:
        changes: dict[str, Any] = {}
        below = (*ancestors, obj)
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            names = (*field_names, f.name)
            skip = excluded or f.name in _NON_BROKER_ENDPOINT_FIELDS
            child_path = _join(path, f.name)
            if isinstance(value, tuple) and any(dataclasses.is_dataclass(v) for v in value):
                changes[f.name] = tuple(
                    rebuild(v, child_path + "[]", below, names, skip)
                    if dataclasses.is_dataclass(v)
                    else v
                    for v in value
                )
            elif dataclasses.is_dataclass(value):
                changes[f.name] = rebuild(value, child_path, below, names, skip)
        if _is_endpoint(obj, excluded):
            host, port = new(_endpoint_of(obj, path, ancestors, field_names))
            low, high = _port_range(obj)
            if not low <= port <= high:
                raise ValueError(f"port {port} does not fit {path or '<top>'}.port")
            changes["host"] = host
            changes["port"] = port
        return dataclasses.replace(obj, **changes) if changes else obj

    return rebuild(msg, "", (), (), _message_excluded(msg))
