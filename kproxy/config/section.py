"""The base of every settings section: frozen, unknown keys refused and named first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from kproxy.config.errors import key_segment, unknown_key
from kproxy.config.types import fail

__all__ = ["Section"]


class Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=False)

    @model_validator(mode="before")
    @classmethod
    def _known_keys_first(cls, data: Any) -> Any:
        """An unknown key is named before any problem with a value."""
        if isinstance(data, Mapping):
            for key in data:
                if not isinstance(key, str) or key not in cls.model_fields:
                    raise fail(key_segment(key), unknown_key(key, list(cls.model_fields)))
        return data
