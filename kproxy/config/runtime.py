"""`runtime`: the event loop, and how many worker processes serve clients."""

from __future__ import annotations

import os
from typing import Any, Final, Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from kproxy.config.section import Section

MAX_WORKERS: Final = 256


class RuntimeSettings(Section):
    event_loop: Literal["auto", "uvloop", "asyncio"] = Field(
        "auto", description="auto: uvloop when installed, else the standard loop"
    )
    workers: int | Literal["auto"] = Field(
        1,
        description="processes serving clients, each on its own core, all sharing every "
        "listening port (SO_REUSEPORT); auto: one per CPU kproxy may use",
    )

    @field_validator("workers", mode="before")
    @classmethod
    def _worker_count(cls, value: Any) -> Any:
        whole = isinstance(value, int) and not isinstance(value, bool)
        if value != "auto" and not (whole and 1 <= value <= MAX_WORKERS):
            raise PydanticCustomError(
                "workers", "must be a whole number from 1 to {most}, or auto", {"most": MAX_WORKERS}
            )
        return value

    def worker_count(self) -> int:
        """How many worker processes: `workers`, or one per usable CPU for auto."""
        if self.workers == "auto":
            return max(1, len(os.sched_getaffinity(0)))
        return self.workers
