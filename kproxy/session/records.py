"""What a session keeps (its limits, each response held for release) and the tuples its
steps carry (a close, a node learned)."""

from __future__ import annotations

from typing import NamedTuple

from kproxy.protocol.frames import FrameMore, FrameStart
from kproxy.protocol.walker import WalkResult
from kproxy.session.inflight import InFlight

# What the client's frame reader hands over: a whole request, or a large one's pieces.
Frame = memoryview | FrameStart | FrameMore


def frame_bytes(frame: Frame) -> int:
    if type(frame) is FrameStart:
        return len(frame.head)
    if type(frame) is FrameMore:
        return len(frame.data)
    return len(frame)  # type: ignore[arg-type]


class SessionLimits(NamedTuple):
    max_frame_bytes: int
    max_in_flight_requests: int
    # Responses at least this large leave as they arrive (kproxy.session.streaming); 0: never.
    stream_responses_after: int = 65536


class Held(NamedTuple):
    """A response walked but not yet rewritten and released."""

    request: InFlight
    frame: memoryview
    walked: WalkResult | None
    upstream_seconds: float
    # The chunk read from the broker, when it was this response and nothing else: sent
    # as it came when nothing in the response changes (`FrameReader.whole`).
    whole: bytes | None


class SessionClose(NamedTuple):
    """Bad bytes from one side: the pair is closed, with this reason logged and counted."""

    side: str  # "client" or "upstream"
    reason: str  # a short, bounded label (ProtocolError.reason)
    message: str

    @property
    def cause(self) -> str:
        return f"{self.side}_{self.reason}"


class NodeLearned(NamedTuple):
    """The cluster named a node's advertised address for the first time, or a new one."""

    node_id: int
    host: str
    port: int
