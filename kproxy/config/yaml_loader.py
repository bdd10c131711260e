"""Reading a configuration file: strict YAML (no repeated keys), one-line errors."""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

import yaml

from kproxy.config.errors import FILE_PATH, ConfigError


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that rejects a key repeated within one mapping."""


def _construct_unique_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Hashable] = set()
    for key_node, _value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, Hashable):
            continue  # construct_mapping reports unhashable keys itself
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)


def _describe_yaml_error(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = exc.problem or exc.context or "syntax error"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
        return problem
    return " ".join(str(exc).split())


def _type_name(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


def read_yaml(path: str | os.PathLike[str]) -> Mapping[Any, Any]:
    """The top-level mapping of the YAML file at ``path``."""
    name = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(FILE_PATH, f"cannot read {name}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(FILE_PATH, f"{name} is not valid UTF-8") from None
    try:
        # _StrictLoader is a SafeLoader subclass: no arbitrary object construction.
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(
            FILE_PATH, f"invalid YAML in {name}: {_describe_yaml_error(exc)}"
        ) from None
    if data is None:
        raise ConfigError(FILE_PATH, f"{name} is empty; top level must be a mapping")
    if not isinstance(data, Mapping):
        raise ConfigError(FILE_PATH, f"top level must be a mapping, got {_type_name(data)}")
    return data
