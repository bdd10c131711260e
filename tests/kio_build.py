"""kio messages of any version from one set of values: :func:`build` takes a superset of
a message's fields (each version keeps the ones it has), and :class:`Sub` builds a
nested struct or array from the field's own kio class, which differs per version."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any

from kio.schema.create_topics.v7.response import CreatableTopicResult
from kio.schema.errors import ErrorCode

__all__ = ["Sub", "build", "field_class"]


def _strip_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def field_class(cls: type, name: str) -> type:
    """The kio dataclass of a struct field or of an array field's items."""
    tp = _strip_optional(_hints(cls)[name])
    if typing.get_origin(tp) is tuple:
        tp = _strip_optional(typing.get_args(tp)[0])
    if not dataclasses.is_dataclass(tp):
        raise TypeError(f"{cls.__qualname__}.{name} is not a struct or an array of structs")
    return tp  # type: ignore[return-value]


class Sub:
    """A nested value built from the field's own kio class (it differs per version)."""

    def __init__(self, make: Callable[[type], Any]) -> None:
        self.make = make


def build(cls: type, **values: Any) -> Any:
    """An instance of a kio class from a superset of its fields' values.

    Values for fields that this version does not have are ignored, so one call serves
    every version of a message; a :class:`Sub` value is called with the field's class.
    Fields with a default may be left out; a missing required field raises TypeError.
    """
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        value = values[f.name]
        if isinstance(value, Sub):
            value = value.make(field_class(cls, f.name))
        kwargs[f.name] = value
    return cls(**kwargs)


def topic_result(name: str, code: ErrorCode) -> CreatableTopicResult:
    """One topic's result in a CreateTopics v7 response."""
    return CreatableTopicResult(
        name=name,
        topic_id=None,
        error_code=code,
        error_message=None,
        num_partitions=1,
        replication_factor=1,
        configs=None,
    )
