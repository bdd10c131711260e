"""Configuration errors as one line each: ``<yaml path>: <problem>``."""

from __future__ import annotations

import difflib
import json
import re
from typing import Any, Final

from pydantic import BaseModel, ValidationError

FILE_PATH: Final = "<file>"
"""The error path used for problems with the file as a whole."""

_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Lists in the configuration: their items are written [i], not .i
_LIST_FIELDS: Final = frozenset({"bootstrap_servers", "allow", "deny"})

# pydantic's error types -> kproxy's wording (YAML users, not Python programmers).
_MESSAGES: Final = {
    "missing": "required",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "string_too_short": "must not be empty",
    "greater_than_equal": "must be >= {ge}",
    "greater_than": "must be > {gt}",
    "less_than_equal": "must be <= {le}",
    "less_than": "must be < {lt}",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "dict_type": "must be a mapping",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "too_short": "must have at least {min_length} item(s)",
    "literal_error": "must be one of {expected}",
    "path_type": "must be a string",
}
_NO_VALUE_ECHO: Final = frozenset({"missing", "extra_forbidden", "kproxy", "secret"})


class ConfigError(ValueError):
    """A configuration problem at ``path``; ``str()`` gives ``"path: message"``."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, message)
        self.path = path
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def unknown_key(key: object, fields: list[str]) -> str:
    """The message for a key no field has: the closest field's name when one is close
    (a misspelling, or `-` for `_`), and every field's."""
    near = difflib.get_close_matches(str(key).replace("-", "_"), fields, n=1)
    hint = f", did you mean {near[0]!r}?" if near else ""
    return f"unknown key{hint} (allowed: {', '.join(fields)})"


def key_segment(key: object) -> str:
    """A mapping key as a path segment: quoted unless an identifier or an integer."""
    if isinstance(key, int) and not isinstance(key, bool):
        return str(key)
    if isinstance(key, str) and _IDENTIFIER_RE.fullmatch(key):
        return key
    return json.dumps(key if isinstance(key, str) else str(key), ensure_ascii=False)


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    previous: object = None
    for part in loc:
        if part == "[key]":  # pydantic marks an error in a mapping's key this way
            continue
        if isinstance(part, int) and previous in _LIST_FIELDS:
            out += f"[{part}]"
        else:
            segment = key_segment(part)
            out = f"{out}.{segment}" if out else segment
        previous = part
    return out


def _model_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = root
    for part in loc:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return None
        annotation = model.model_fields[part].annotation
        model = (
            annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel)
            else None
        )
    return model


def _range(root: type[BaseModel], loc: tuple[int | str, ...]) -> str | None:
    """``lo-hi`` for a field bounded on both sides (ports: ``0-65535``), else None."""
    model = _model_at(root, loc[:-1])
    name = loc[-1] if loc else None
    if model is None or not isinstance(name, str) or name not in model.model_fields:
        return None
    lo = hi = None
    for meta in model.model_fields[name].metadata:
        lo = getattr(meta, "ge", lo)
        hi = getattr(meta, "le", hi)
    return f"{lo}-{hi}" if lo is not None and hi is not None else None


def _echo(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe_validation_error(exc: ValidationError, root: type[BaseModel]) -> ConfigError:
    """The first problem pydantic found (an unknown key before anything else)."""
    errors = exc.errors(include_url=False)
    # With `clusters`, `cluster` is a copy of the active one: its problems are named there.
    if any(e["loc"][:1] == ("clusters",) for e in errors):
        errors = [e for e in errors if e["loc"][:1] != ("cluster",)] or errors
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    kind = first["type"]
    loc = tuple(first["loc"])
    # Bounds read as the YAML wrote them: 0, not 0.0.
    ctx: dict[str, Any] = {
        k: int(v) if isinstance(v, float) and v.is_integer() else v
        for k, v in (first.get("ctx") or {}).items()
    }
    if kind == "kproxy":
        at = str(ctx["at"])
        path = _path(loc)
        return ConfigError(f"{path}.{at}" if path else at, str(ctx["message"]))
    path = _path(loc)
    if kind == "extra_forbidden":
        model = _model_at(root, loc[:-1])
        fields = list(model.model_fields) if model is not None else []
        return ConfigError(path, unknown_key(loc[-1], fields))
    if kind == "too_short" and ctx.get("min_length") == 1:
        kind = "string_too_short"  # an empty list where one item is needed
    bounds = _range(root, loc) if kind in ("greater_than_equal", "less_than_equal") else None
    template = f"must be {bounds}" if bounds is not None else _MESSAGES.get(kind)
    message = template.format(**ctx) if template is not None else str(first["msg"])
    if kind not in _NO_VALUE_ECHO and not isinstance(first.get("input"), dict):
        message += f" (got {_echo(first.get('input'))})"
    return ConfigError(path or FILE_PATH, message)
