"""Hypothesis strategies for kio's message dataclasses (the independent codec of
``tests/kio_support.py``). kio ships none; ``st.from_type`` works on its dataclasses (the
primitive types have ``__hypothesis_hook__``), but with unbounded sizes and arbitrary
error codes, so :func:`message_strategy` builds its own: small arrays and strings, error
codes kio knows, times kio can write."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import struct
import types
import typing
from typing import Any

from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial.readers import read_datetime_i64

INT_RANGES: dict[str, tuple[int, int]] = {
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
    if kafka_type in INT_RANGES:
        low, high = INT_RANGES[kafka_type]
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
        low, high = INT_RANGES["int32"]
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
