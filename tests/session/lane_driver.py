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

from kproxy.session import ProxySession, SessionLimits
from kproxy.session.admission import CLIENT_REFUSED_APIS
from kproxy.session.inflight import InFlight
from kproxy.session.policy import ApiPolicy
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


class Driven:
    """A session, and what each read made of it, normalised to compare."""

    def __init__(
        self, lane: bool, max_in_flight: int, denied: frozenset[int], awaits: bool, taken: int = 0
    ) -> None:
        self.lane = lane
        self.taken = taken  # frames the lane took (over the connections of one example)
        self.leading = 0  # frames the lane took from the front of the last read of several
        self.passed = 0  # reads inside a streamed response the lane sent on
        self.kept = 0  # reads of part of a small response the lane kept
        self.completed = 0  # small responses read in parts the lane sent whole
        self.session = ProxySession(
            address_map(open_nodes=(1, 2)),
            SessionLimits(1 << 20, max_in_flight),
            CLIENT_REFUSED_APIS,
            ApiPolicy("test", denied),
            None,
            EVERY_CLIENT if awaits else frozenset(),
        )
        self.closed = False

    def client(self, data: bytes, now: float) -> tuple[Any, ...]:
        s = self.session
        lane_out, lane_requests = b"", []
        self.leading = 0
        if self.lane:  # as the runtime does (kproxy.runtime.client.ClientConnection)
            key = s.request_alone(data, now)
            if key >= 0:
                self.taken += 1
                return ("client", data, b"", [(key, len(data) - 4)], False, 0, [], None)
            end = s.requests_leading(data, now, lane_requests)
            self.leading = len(lane_requests)
            self.taken += self.leading
            lane_out, data = data[:end], data[end:]
            if not data:
                return ("client", lane_out, b"", lane_requests, False, 0, [], None)
        step = s.client_bytes(data, now)
        self.closed = step.close is not None
        return (
            "client",
            lane_out + joined(step.to_upstream),
            joined(step.to_client),
            lane_requests + step.requests,
            step.pause_reading,
            step.held,
            step.refused,
            None if step.close is None else step.close.cause,
        )

    def upstream(self, data: bytes, now: float) -> tuple[Any, ...]:
        s = self.session
        lane_out, lane_facts = b"", []
        self.leading = 0
        if self.lane:
            taken: list[tuple[InFlight, int]] = []
            # In the runtime's order (kproxy.runtime.client.ClientConnection.upstream_bytes).
            req = None
            read = s.response_read(data)
            if read is True:
                self.kept += 1
                return ("upstream", b"", b"", [], [], [], False, None)
            if read is not False:
                req, whole = read
                if whole is not data:
                    self.completed += 1
                data = whole  # what the lane sends: the whole response, as it came
            elif s.streamed_passes(data):
                self.passed += 1
                return ("upstream", data, b"", [], [], [], False, None)
            if req is not None:
                taken, end = [(req, len(data) - 4)], len(data)
            else:
                end = s.responses_leading(data, taken)
                self.leading = len(taken)
            self.taken += len(taken)
            lane_out, data = data[:end], data[end:]
            for req, size in taken:
                seen = (req.api_key, req.version, req.client_id, size, req.received)
                lane_facts.append((*seen, now - req.received, None, frozenset(), 0, 0))
            if not data:
                return ("upstream", lane_out, b"", [], lane_facts, [], False, None)
        step = s.upstream_bytes(data, now)
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
            lane_out + joined(step.to_client),
            joined(step.to_upstream),
            step.requests,
            lane_facts + responses,
            step.refused,
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


def frames_then_rest(data: bytes, frames: int) -> list[bytes]:
    """`data` cut after each of its first `frames` frames."""
    reads, pos = [], 0
    for _ in range(frames):
        end = pos + 4 + struct.unpack_from(">i", data, pos)[0]
        reads.append(data[pos:end])
        pos = end
    return [*reads, data[pos:]] if pos < len(data) else reads


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
