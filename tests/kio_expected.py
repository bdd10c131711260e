"""Which broker endpoints and partition leaders a kio message carries, computed from kio's
dataclasses alone (no kproxy code): the oracle the rewrite and leadership tests compare
kproxy's walk with; and a message with its endpoints replaced, as a rewrite must leave
it."""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from kio.schema.errors import ErrorCode

from tests.kio_strategies import INT_RANGES


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


def has_field(obj: Any, name: str) -> bool:
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
    return not excluded and has_field(obj, "host") and has_field(obj, "port")


def _endpoint_of(
    obj: Any, path: str, ancestors: tuple[Any, ...], field_names: tuple[str, ...]
) -> ExpectedEndpoint:
    node_id: int | None = None
    for name in _OWN_ID_FIELDS:
        if has_field(obj, name):
            node_id = int(getattr(obj, name))
            break
    else:
        if not (field_names and field_names[-1] in _LEADER_ENDPOINT_ARRAYS):
            node_id = _nearest_id(ancestors)
    listener = next(
        (getattr(obj, name) for name in _LISTENER_FIELDS if has_field(obj, name)),
        None,
    )
    rack = obj.rack if has_field(obj, "rack") else None
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
            if has_field(ancestor, name):
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
        names = [n for n in (*_TOPIC_NAME_FIELDS, "topic_id") if has_field(candidate, n)]
        if not names:
            continue
        topic = next(
            (
                getattr(candidate, n)
                for n in _TOPIC_NAME_FIELDS
                if has_field(candidate, n) and isinstance(getattr(candidate, n), str | None)
            ),
            None,
        )
        topic_id = candidate.topic_id if has_field(candidate, "topic_id") else None
        return topic, topic_id
    return None, None


def _partition_of(obj: Any) -> int | None:
    for name in _PARTITION_FIELDS:
        if has_field(obj, name):
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
        if partition is None or not any(has_field(obj, n) for n in _LEADER_MARKER_FIELDS):
            continue
        own_leader = next((n for n in ("leader_id", "leader") if has_field(obj, n)), None)
        hint = False
        leader_id = _int_or_none(getattr(obj, own_leader)) if own_leader else None
        leader_epoch = _int_or_none(obj.leader_epoch) if has_field(obj, "leader_epoch") else None
        if (
            own_leader is None
            and not has_field(obj, "leader_epoch")
            and has_field(obj, "current_leader")
        ):
            current = obj.current_leader
            if current is not None:
                leader_id = _int_or_none(current.leader_id)
                leader_epoch = _int_or_none(current.leader_epoch)
                hint = True
        topic, topic_id = _topic_of(obj, ancestors)
        error_code = _int_or_none(obj.error_code) if has_field(obj, "error_code") else None
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
    return INT_RANGES.get(kafka_type, INT_RANGES["int32"])


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


def kio_path(path: str) -> str:
    """A kproxy schema path (``Nodes[].Listeners[]``) in kio's spelling (snake case)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", path).lower()


_REMOVED = "\x00kproxy-test: removed\x00"


def _is_removed(obj: Any) -> bool:
    return dataclasses.is_dataclass(obj) and getattr(obj, "host", None) == _REMOVED


def _drop_removed(obj: Any, coordinator: bool) -> Any:
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, tuple):
            kept = [x for x in value if coordinator or not _is_removed(x)]
            changes[f.name] = tuple(
                _drop_removed(x, coordinator) if dataclasses.is_dataclass(x) else x for x in kept
            )
        elif dataclasses.is_dataclass(value):
            changes[f.name] = _drop_removed(value, coordinator)
    if _is_removed(obj):
        if coordinator:
            changes.update(error_code=ErrorCode(15), host="", port=-1)
        else:
            changes.update(host="", port=0)
    return dataclasses.replace(obj, **changes)


def apply_mapping(msg: Any, mapping: Callable[[ExpectedEndpoint], tuple[str, int] | None]) -> Any:
    """What kproxy's rewriter must turn `msg` into, computed on kio's objects only.

    Mapped endpoints get their new (host, port); an unmappable one is removed from its
    array, except in FindCoordinator (error 15, host "", port -1) and outside arrays
    (UpdateRaftVoterResponse.CurrentLeader: host "", port 0).
    """

    def mark(ep: ExpectedEndpoint) -> tuple[str, int]:
        target = mapping(ep)
        return (_REMOVED, 0) if target is None else target

    coordinator = getattr(type(msg), "__api_key__", None) == 10  # FindCoordinator
    return _drop_removed(replace_endpoints(msg, mark), coordinator)
