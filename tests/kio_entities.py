"""What a kio message names, by kio's types: kio tells a topic name, a group id and a
transactional id from other strings, independently of kproxy's generated tables."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from kio.schema import types as kio_types

from kproxy.protocol.entities import GROUP, TOPIC, TRANSACTIONAL_ID

_KIO_KINDS = {
    kio_types.TopicName: TOPIC,
    kio_types.GroupId: GROUP,
    kio_types.TransactionalId: TRANSACTIONAL_ID,
}


def kio_fields(value: Any) -> list[tuple[Any, Any]]:
    """Every (dataclass field, value) of a kio message, nested structs and arrays
    included, in field order."""
    found: list[tuple[Any, Any]] = []
    for field in dataclasses.fields(value):
        item = getattr(value, field.name)
        found.append((field, item))
        for element in item if isinstance(item, tuple) else (item,):
            if dataclasses.is_dataclass(element):
                found.extend(kio_fields(element))
    return found


def kio_named(value: Any) -> list[tuple[str, str]]:
    """The entities a kio message names, by the kio type of each field."""
    found: list[tuple[str, str]] = []
    for field, item in kio_fields(value):
        kind = kind_of(field.type)
        if kind is not None:
            names = item if isinstance(item, tuple) else (item,)
            found.extend((kind, name) for name in names if name)
    return found


def kind_of(tp: Any) -> str | None:
    """The entity a field of kio type `tp` names (kproxy.protocol.entities), if any."""
    for arg in (tp, *typing.get_args(tp)):
        kind = _KIO_KINDS.get(arg)
        if kind is not None:
            return kind
        for inner in typing.get_args(arg):
            if inner in _KIO_KINDS:
                return _KIO_KINDS[inner]
    return None
