"""Where a Produce or Fetch response carries `throttle_time_ms`, and setting it there
(sans-IO): how kproxy tells a client that went over its quota to back off, as a broker
does (KIP-13; since KIP-219 the response is sent at once and the client waits).

Fetch (v1+) carries it first in its body. Produce (v1+) carries it after its responses
array: the body's last 4 bytes before flexible versions, and then before the top-level
tagged fields (KIP-951's `NodeEndpoints`), found by following the message's plan."""

from __future__ import annotations

from kproxy.protocol.apis import FETCH, PRODUCE
from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.plan import plan_for
from kproxy.protocol.skim import ResponseSkim

CARRIERS = frozenset((PRODUCE, FETCH))


def throttle_offset(frame: memoryview, body: int, api_key: int, version: int) -> int | None:
    """The frame offset (the frame without its size prefix) of `throttle_time_ms`, or
    None when this response has none."""
    if api_key not in CARRIERS or version < 1:
        return None
    if api_key == FETCH:
        return body
    plan = plan_for(PRODUCE, False, version)
    if plan is None:
        return None
    if plan[1] is None:  # before flexible versions: the body's last field
        return len(frame) - 4
    skim = ResponseSkim(plan, frame[:body])
    skim.feed(frame[body:])
    skim.finish()
    return skim.tail_start - 4


def with_throttle(
    frame: memoryview, body: int, api_key: int, version: int, throttle_ms: int
) -> memoryview:
    """`frame` with its `throttle_time_ms` raised to `throttle_ms` (a copy; the frame
    itself when it has no such field or already says as long)."""
    at = throttle_offset(frame, body, api_key, version)
    if at is None:
        return frame
    if at < body or at + 4 > len(frame):
        raise MalformedMessage(f"no room for throttle_time_ms in a {len(frame)}-byte response")
    said = int.from_bytes(frame[at : at + 4], "big", signed=True)
    if said >= throttle_ms:
        return frame
    copy = bytearray(frame)
    copy[at : at + 4] = throttle_ms.to_bytes(4, "big", signed=True)
    return memoryview(copy)
