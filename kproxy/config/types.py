"""The value types of kproxy's configuration: ports, hosts, broker addresses, secrets.

Each is an annotated type, so that pydantic validates it strictly (no bool for an int,
no number for a string) and the JSON Schema describes it; their errors read as
kproxy's (`kproxy.config.errors`).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr, Strict
from pydantic_core import PydanticCustomError

from kproxy.protocol.hostport import MAX_PORT, HostPort, is_valid_host, parse_host_port


def fail(at: str, message: str) -> PydanticCustomError:
    """An error at `at` (a path below the model that raises it) with `message`."""
    return PydanticCustomError("kproxy", "{message}", {"at": at, "message": message})


def one_of(names: Collection[str], what: str) -> Callable[[str], str]:
    """A validator: the value must be one of `names`; another is refused with the
    nearest one (`not a Kafka API name (did you mean 'CreateTopics'?)`), so that a typo
    fails at load instead of leaving something open."""

    def check(value: str) -> str:
        if value not in names:
            near = difflib.get_close_matches(value, list(names), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise PydanticCustomError("name", "{message}", {"message": f"not {what}{hint}"})
        return value

    return check


def _host(value: str) -> str:
    if not is_valid_host(value):
        raise PydanticCustomError("host", "must be a hostname or IP address")
    return value


def _host_port(value: Any) -> Any:
    if isinstance(value, tuple):  # already parsed (settings built in code)
        return value
    if not isinstance(value, str):
        raise PydanticCustomError("host_port", "must be host:port")
    try:
        return parse_host_port(value)
    except ValueError:
        raise PydanticCustomError("host_port", "must be host:port") from None


def _read_secret(value: Any) -> Any:
    """``{env: NAME}`` or ``{file: PATH}`` -> the secret's text; a string as it is."""
    if not isinstance(value, Mapping):
        return value
    if set(value) == {"env"} and isinstance(value["env"], str):
        found = os.environ.get(value["env"])
        if found is None:
            raise PydanticCustomError(
                "secret", "environment variable {name} is not set", {"name": value["env"]}
            )
        return found
    if set(value) == {"file"} and isinstance(value["file"], str):
        try:
            text = Path(value["file"]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PydanticCustomError(
                "secret", "cannot read {path}: {why}", {"path": value["file"], "why": str(exc)}
            ) from None
        return text.removesuffix("\n")
    raise PydanticCustomError("secret", "must be a string, {env: NAME} or {file: PATH}")


def upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


def non_empty_path(value: Any) -> Any:
    if isinstance(value, str) and not value:
        raise PydanticCustomError("string_too_short", "must not be empty")
    if not isinstance(value, str | Path):
        raise PydanticCustomError("string_type", "must be a string")
    return value


def _decimal_key(value: object) -> object:
    # JSON object keys are strings: a configuration written from JSON, or rendered by a
    # Helm template, names node 1001 as "1001". Only whole decimal numbers are taken.
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return value


# A node id as a mapping key: an integer, or the decimal string JSON makes of one.
NodeIdKey = Annotated[int, BeforeValidator(_decimal_key), Strict(), Field(ge=0)]
Bool = Annotated[bool, Strict()]
Port = Annotated[int, Strict(), Field(ge=0, le=MAX_PORT, description="0: a port the OS chooses")]
NodePort = Annotated[int, Strict(), Field(ge=1, le=MAX_PORT)]
Seconds = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
PositiveSeconds = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
Host = Annotated[str, Strict(), Field(min_length=1), AfterValidator(_host)]
BrokerAddress = Annotated[
    HostPort,
    BeforeValidator(_host_port),
    Field(
        json_schema_extra={"type": "string", "pattern": r"^(\[[0-9A-Fa-f:.%\w]+\]|[^:\s]+):\d+$"}
    ),
]
Secret = Annotated[
    SecretStr,
    BeforeValidator(_read_secret),
    Field(description="the value, {env: NAME} or {file: PATH}"),
]
