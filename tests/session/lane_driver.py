"""What the fast-lane tests drive: request and response pieces of every kind the lane
must take or leave (built by kio or by hand, never by kproxy), a session driven as the
runtime drives it with what each read made of it normalised to compare, and the ways
one side's bytes can arrive (alone, split, run together, a large response in reads).
"""

from __future__ import annotations

import datetime
import itertools
import struct
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.heartbeat.v4.response import HeartbeatResponse

from kproxy.protocol.frames import FrameReader
from kproxy.session import ClientStep, ProxySession, SessionLimits, UpstreamStep, fast_lane
from kproxy.session.admission import CLIENT_REFUSED_APIS
from kproxy.session.fast_lane import FastLane
from kproxy.session.policy import ApiPolicy
from kproxy.session.streaming import StreamedResponse
from tests.kio_support import encode_request_frame, encode_response_frame
from tests.property.scan_support import with_first_partition
from tests.session.fetch_frames import RECORDS as FETCH_RECORDS
from tests.session.fetch_frames import fetch_request, fetch_response
from tests.session.frames import (
    address_map,
    joined,
    metadata_request,
    metadata_response,
    produce_redirect,
    produce_request,
    produce_response,
    request_with,
)

HEARTBEAT = 12
BROKERS = [(1, "broker-1.invalid", 9092), (2, "broker-2.invalid", 9092)]


def heartbeat_request(corr: int, client_id: str | None = "app") -> bytes:
    msg = HeartbeatRequest(group_id="g", generation_id=1, member_id="m", group_instance_id=None)
    return encode_request_frame(msg, corr, client_id)


def heartbeat_response(corr: int) -> bytes:
    msg = HeartbeatResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none)
    return encode_response_frame(msg, corr)


def with_header_tag(request: bytes, client_id_length: int) -> bytes:
    """The same flexible request with one (empty) tagged field in its header."""
    at = 4 + 10 + client_id_length  # the header's tagged-field count
    body = request[4:at] + b"\x01\x00\x00" + request[at + 1 :]
    return struct.pack(">i", len(body)) + body


def client_piece(kind: int, corr: int) -> bytes:
    pieces = [
        lambda: produce_request(corr, acks=1),
        lambda: produce_request(corr, acks=-1),
        lambda: produce_request(corr, acks=0),
        lambda: heartbeat_request(corr),
        lambda: heartbeat_request(corr, client_id=None),
        lambda: with_header_tag(heartbeat_request(corr), 3),
        lambda: request_with(HEARTBEAT, 0, corr, b"\x00\x01g\x00\x00\x00\x01\x00\x01m"),
        lambda: request_with(HEARTBEAT, 4, corr),  # flexible, its tagged fields missing
        lambda: metadata_request(corr),
        lambda: request_with(18, 0, corr),  # ApiVersions v0
        lambda: request_with(62, 0, corr),  # the controller plane
        lambda: request_with(9999, 0, corr),  # no such API
        lambda: struct.pack(">i", 12) + struct.pack(">hhih", 12, 0, corr, 2) + b"\xff\xfe",
        # Client ids the lane's last-id cache must tell apart from "app": the same length
        # with other bytes, empty, and not ASCII.
        lambda: heartbeat_request(corr, client_id="apq"),
        lambda: heartbeat_request(corr, client_id=""),
        lambda: heartbeat_request(corr, client_id="\u00e4pp"),
        lambda: fetch_request(17, corr),  # flexible, TopicIds, NodeEndpoints (KIP-951)
        lambda: fetch_request(11, corr),  # before flexible versions
    ]
    return pieces[kind % len(pieces)]()


def fetch(corr: int, version: int, how: str) -> bytes:
    """A Fetch response below the streaming threshold, gathered and read whole: plain,
    with a partition's error, or (v12+) a partition moved (CurrentLeader, and from v16
    NodeEndpoints)."""
    moved = how == "moved"
    endpoints = tuple(BROKERS) if moved and version >= 16 else ()
    msg = fetch_response(version, FETCH_RECORDS, 2 if moved else None, endpoints)
    if how == "error":
        msg = with_first_partition(msg, "partitions", error_code=ErrorCode.offset_out_of_range)
    return encode_response_frame(msg, corr)


def upstream_piece(kind: int, corr: int) -> bytes:
    pieces = [
        lambda: produce_response(corr),
        lambda: produce_response(corr, ErrorCode.not_enough_replicas),
        lambda: produce_redirect(corr, 2, "broker-2.invalid", 9092),
        lambda: heartbeat_response(corr),
        lambda: metadata_response(corr, BROKERS),
        lambda: struct.pack(">ii", 4, corr),  # a correlation id and nothing more
        lambda: struct.pack(">iib", 5, corr, 1),  # a tagged-field count with no field
        lambda: struct.pack(">i", 2) + b"\x00\x00",  # shorter than a correlation id
        lambda: fetch(corr, 17, "plain"),
        lambda: fetch(corr, 17, "error"),
        lambda: fetch(corr, 17, "moved"),
        lambda: fetch(corr, 11, "plain"),
        lambda: fetch(corr, 11, "error"),
    ]
    return pieces[kind % len(pieces)]()


class _EveryClient:
    """Every client awaits a success: each plain response is walked."""

    def __contains__(self, client_id: object) -> bool:
        return True


EVERY_CLIENT = _EveryClient()


# Compiled, FastLane takes no subclass defined in Python (mypyc's native classes do not):
# the tests that read the counts below are pure_python ones.
LANE_COMPILED = not (fast_lane.__file__ or "").endswith(".py")


def counting_lane(taken: int) -> Any:
    """A `CountingLane` (defined here, not at import: compiled, FastLane takes no
    subclass defined in Python, and this module is imported by tests that do not count)."""

    class CountingLane(FastLane):
        """The fast lane, counting what it takes for one session (the tests' instrument)."""

        __slots__ = ("completed", "kept", "leading", "passed", "taken")

        def __init__(self, taken: int) -> None:
            self.taken = taken  # frames taken (over the connections of one example)
            self.leading = 0  # frames taken from the front of the last read of several
            self.passed = 0  # reads inside a streamed response sent on
            self.kept = 0  # reads of part of a small response kept
            self.completed = 0  # small responses read in parts sent whole

        def requests(self, session: ProxySession, data: bytes, now: float, step: ClientStep) -> int:
            before = len(step.requests)
            end = super().requests(session, data, now, step)
            self._took(len(step.requests) - before, end == len(data))
            return end

        def responses(
            self, session: ProxySession, data: bytes, now: float, step: UpstreamStep
        ) -> int:
            before = len(step.responses)
            end = super().responses(session, data, now, step)
            took = len(step.responses) - before
            if end and not took:
                self.kept += 1
            elif took == 1 and end == len(data) and step.to_client[-1] is not data:
                self.completed += 1
            self._took(took, end == len(data))
            return end

        def streamed(self, data: bytes, stream: StreamedResponse, reader: FrameReader) -> bool:
            passed = super().streamed(data, stream, reader)
            self.passed += passed
            return passed

        def _took(self, frames: int, whole_read: bool) -> None:
            self.taken += frames
            # One frame that was the whole read: taken alone, not from a read of several.
            self.leading = 0 if frames == 1 and whole_read else frames

    return CountingLane(taken)


class Driven:
    """A session, and what each read made of it, normalised to compare: with its fast
    lane (`lane`), or with every read on the general path."""

    def __init__(
        self, lane: bool, max_in_flight: int, denied: frozenset[int], awaits: bool, taken: int = 0
    ) -> None:
        self.lane = lane
        self.session = ProxySession(
            address_map(open_nodes=(1, 2)),
            SessionLimits(1 << 20, max_in_flight),
            CLIENT_REFUSED_APIS,
            ApiPolicy("test", denied),
            None,
            EVERY_CLIENT if awaits else frozenset(),
            fast_lane=lane,
        )
        # With its lane, it is driven as the runtime drives it: each read made into the
        # same two steps (`into`); without, into a new one each time.
        self.into = (ClientStep(), UpstreamStep()) if lane else None
        self.counts = counting_lane(taken) if lane and not LANE_COMPILED else None
        if self.counts is not None:
            self.session._lane = self.counts
        self.closed = False

    def __getattr__(self, name: str) -> int:
        """The lane's counts (0 without one): taken, leading, passed, kept, completed."""
        if name in ("taken", "leading", "passed", "kept", "completed"):
            return 0 if self.counts is None else int(getattr(self.counts, name))
        raise AttributeError(name)

    def client(self, data: bytes, now: float) -> tuple[Any, ...]:
        if self.counts is not None:
            self.counts.leading = 0
        step = self.session.from_client(data, now, None if self.into is None else self.into[0])
        self.closed = step.close is not None
        return (
            "client",
            joined(step.to_upstream),
            joined(step.to_client),
            step.requests,
            step.pause_reading,
            step.held,
            [r.api_key for r in step.refused],
            None if step.close is None else step.close.cause,
        )

    def upstream(self, data: bytes, now: float) -> tuple[Any, ...]:
        s = self.session
        if self.counts is not None:
            self.counts.leading = 0
        step = s.from_upstream(data, now, None if self.into is None else self.into[1])
        while step.nodes_needing_listeners:
            step = s.listeners_opened(now, step)
        self.closed = step.close is not None
        responses = [
            (
                r.api_key,
                r.version,
                r.client_id,
                r.size,
                r.received,
                r.upstream_seconds,
                r.leaders,
                r.endpoint_nodes,
                r.rewritten,
                r.removed,
            )
            for r in step.responses
        ]
        return (
            "upstream",
            joined(step.to_client),
            joined(step.to_upstream),
            step.requests,
            responses,
            [r.api_key for r in step.refused],
            step.resume_reading,
            None if step.close is None else step.close.cause,
        )

    def reads(self, side: str, reads: list[bytes], now: float) -> tuple[Any, ...]:
        """One side's reads in turn (until one closes), merged into what the runtime
        would have done with them: bytes and lists joined, flags or'ed, held counted."""
        results = []
        for data in reads:
            results.append(self.client(data, now) if side == "client" else self.upstream(data, now))
            if self.closed:
                break
        out = list(results[0])
        for result in results[1:]:
            for i, value in enumerate(result[1:], 1):
                if isinstance(value, bool):
                    out[i] = out[i] or value
                elif isinstance(value, (bytes, list, int)):
                    out[i] = out[i] + value
                else:  # the close's cause
                    out[i] = value
        return tuple(out)

    def state(self) -> tuple[Any, ...]:
        s = self.session
        return (
            len(s.inflight),
            s.inflight.unanswered,
            s.answering,
            s.client_bytes_pending,
            s.waiting_bytes,
            s.streaming_request,
        )


def streamed_round_trip(
    version: int, size: int, moved: bool, reads: int, shift: int, from_end: list[int], corr: int
) -> list[tuple[str, bytes]]:
    """A request read alone, and its large response in about `reads` equal reads, the
    cuts shifted by `shift` per mille of one read, and cut again `from_end` bytes before
    its end (small reads among the fields after the records, and in the tail)."""
    if version == 0:
        request, small = heartbeat_request(corr), heartbeat_response(corr)
        response = struct.pack(">i", len(small) - 4 + size) + small[4:] + b"\0" * size
    else:
        endpoints = tuple(BROKERS) if moved and version >= 16 else ()
        msg = fetch_response(version, [b"r" * size], 2 if moved else None, endpoints)
        request, response = fetch_request(version, corr), encode_response_frame(msg, corr)
    n = len(response)
    step = -(-n // reads)
    at = {0, n, *range(step * shift // 1000 or step, n, step), *(n - k for k in from_end)}
    pieces = [response[a:b] for a, b in itertools.pairwise(sorted(at))]
    return [("client", request)] + [("upstream", p) for p in pieces]


def reads_of(pieces: list[bytes], cut: int, mode: int) -> list[bytes]:
    """How one side's next bytes arrive: each alone, one split in two, or run together."""
    if mode == 0 or not pieces:
        return pieces
    if mode == 1:
        first = pieces[0]
        at = cut % (len(first) + 1)
        return [b for b in (first[:at], first[at:]) if b] + pieces[1:]
    return [b"".join(pieces)]
