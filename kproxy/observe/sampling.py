"""Which responses become request samples (`events.request_sample_rate`), drawn as the
gaps between samples.

A uniform draw per response, sampled when below the rate, cost a call on every
response. The gaps between the successes of independent draws with probability `rate`
are geometric, P(gap > k) = (1 - rate) ** k, and one uniform draw gives a gap: a
response between two samples then costs a decrement, and the responses sampled are
distributed exactly as before (tests/observe/test_events_observability.py)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kproxy.protocol.apis import api_name


def next_gap(rate: float, draw: Callable[[], float]) -> int:
    """Responses until the next sample, that one included (0: none is ever sampled);
    `draw` is uniform on [0, 1)."""
    if rate <= 0.0:
        return 0
    if rate >= 1.0:
        return 1
    return 1 + int(math.log(1.0 - draw()) / math.log1p(-rate))


def sample_fields(
    key: int, version: int, client: str | None, total: float, upstream: float
) -> dict[str, Any]:
    """A `request_sample` event's own fields (docs/events.md)."""
    return {
        "api": api_name(key),
        "version": version,
        "client_id": client,
        "total_ms": round(total * 1000.0, 3),
        "upstream_ms": round(upstream * 1000.0, 3),
    }
