"""Fetch frames for the streaming tests, built by kio (an independent codec) for every
version kio has (4-18), and the way a test feeds one to a streaming session: cut at
chosen bytes, listeners opened as the runtime opens them, kproxy's padding taken out
again before kio decodes what the client got.
"""

from __future__ import annotations

import dataclasses
import sys
import uuid
from collections.abc import Container
from typing import Any

from kio.schema.errors import ErrorCode

from kproxy.protocol.apis import FETCH
from kproxy.protocol.tagged_fit import PADDING_TAG
from kproxy.runtime.mapping import AddressMap
from kproxy.session import ProxySession, SessionLimits, UpstreamStep
from tests.kio_expected import replace_endpoints
from tests.kio_support import kio_message_class
from tests.raw_kafka import uvarint
from tests.session.frames import (
    KPROXY_HOST,
    LATER,
    ZERO,
    address_map,
    client,
    joined,
    open_listeners,
    request_with,
)

STREAM_AFTER = 64
KIO_FETCH = range(4, 19)
ENDPOINT_VERSIONS = [v for v in KIO_FETCH if v >= 16]


def _make(cls: type, **values: Any) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def fetch_response(
    version: int,
    records: list[bytes],
    moved_to: int | None = None,
    endpoints: tuple[tuple[int, str, int], ...] = (),
) -> Any:
    """Partitions 0..n-1 with these record bytes; with `moved_to`, one more partition
    answers NOT_LEADER_OR_FOLLOWER with a KIP-951 CurrentLeader hint."""
    mod = sys.modules[kio_message_class(FETCH, version, "response").__module__]
    parts = [
        _make(
            mod.PartitionData,
            partition_index=i,
            error_code=ErrorCode.none,
            high_watermark=1000,
            last_stable_offset=1000,
            log_start_offset=0,
            aborted_transactions=(),
            preferred_read_replica=-1,
            records=rec,
        )
        for i, rec in enumerate(records)
    ]
    if moved_to is not None:
        parts.append(
            _make(
                mod.PartitionData,
                partition_index=len(records),
                error_code=ErrorCode.not_leader_or_follower,
                high_watermark=-1,
                last_stable_offset=-1,
                log_start_offset=-1,
                aborted_transactions=None,
                preferred_read_replica=-1,
                records=None,
                current_leader=mod.LeaderIdAndEpoch(leader_id=moved_to, leader_epoch=9),
            )
        )
    topic = _make(
        mod.FetchableTopicResponse,
        topic="orders",
        topic_id=uuid.UUID(int=7),
        partitions=tuple(parts),
    )
    nodes = tuple(mod.NodeEndpoint(node_id=n, host=h, port=p, rack=None) for n, h, p in endpoints)
    return _make(
        mod.FetchResponse,
        throttle_time=ZERO,
        error_code=ErrorCode.none,
        session_id=0,
        responses=(topic,),
        node_endpoints=nodes,
    )


def fetch_request(version: int, corr: int) -> bytes:
    # Only the header is read: Fetch requests carry no endpoint. Flexible versions
    # (12+) have a header v2, whose tagged-field count follows the client id.
    return request_with(FETCH, version, corr, b"\x00" if version >= 12 else b"")


def streaming_session(
    stream_after: int = STREAM_AFTER,
    open_nodes: tuple[int, ...] = (1, 2, 3),
    awaiting_success: Container[str] | None = None,
) -> tuple[ProxySession, AddressMap]:
    """`awaiting_success`: the clients whose plain responses are walked all the same
    (None: every client's)."""
    mapping = address_map(open_nodes=open_nodes)
    limits = SessionLimits(1 << 20, 100, stream_after)
    s = ProxySession(mapping, limits, awaiting_success=awaiting_success)
    return s, mapping


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def without_padding(out: bytes, tail: int) -> bytes:
    """The frame with kproxy's padding fields taken out of its last `tail` bytes (a
    top-level tagged section) and its size fixed: kio refuses tags it does not know,
    where Kafka's clients skip them (KIP-482)."""
    section = out[len(out) - tail :]
    count, pos = _uvarint(section, 0)
    kept = []
    for _ in range(count):
        tag, pos = _uvarint(section, pos)
        size, pos = _uvarint(section, pos)
        if tag < PADDING_TAG - 1:  # kproxy pads with one field, or two (0x3FFE, 0x3FFF)
            kept.append(uvarint(tag) + uvarint(size) + section[pos : pos + size])
        pos += size
    body = out[4 : len(out) - tail] + uvarint(len(kept)) + b"".join(kept)
    return len(body).to_bytes(4, "big") + body


def kproxy_view(msg: Any) -> Any:
    return replace_endpoints(msg, lambda ep: (KPROXY_HOST, 19000 + ep.node_id))


def through(
    version: int,
    frame: bytes,
    cuts: list[int],
    stream_after: int = STREAM_AFTER,
    awaiting_success: Container[str] | None = None,
) -> tuple[list[bytes], UpstreamStep]:
    """The frame fed in pieces cut at `cuts`: (what each step sent, the last step)."""
    sent, step = answered(fetch_request(version, 5), frame, cuts, stream_after, awaiting_success)
    assert step.close is None, step.close
    return sent, step


def answered(
    request: bytes,
    frame: bytes,
    cuts: list[int],
    stream_after: int = STREAM_AFTER,
    awaiting_success: Container[str] | None = None,
) -> tuple[list[bytes], UpstreamStep]:
    """`request` from a client of a fresh streaming session, then the response `frame`
    fed in pieces cut at `cuts` (see `fed_in_pieces`): (what each step sent, the last)."""
    s, mapping = streaming_session(stream_after, awaiting_success=awaiting_success)
    client(s, request)
    return fed_in_pieces(s, mapping, frame, cuts)


def fed_in_pieces(
    s: ProxySession, mapping: AddressMap, frame: bytes, cuts: list[int]
) -> tuple[list[bytes], UpstreamStep]:
    """A broker's bytes fed to `s` in pieces cut at `cuts`, listeners opened as the
    runtime opens them, up to the step that closes the session if one does: (what each
    step sent, the last step)."""
    sent: list[bytes] = []
    step = None
    for a, b in zip([0, *cuts], [*cuts, len(frame)], strict=True):
        step = s.from_upstream(frame[a:b], LATER)
        while step.nodes_needing_listeners:  # as the runtime does
            open_listeners(mapping, step.nodes_needing_listeners)
            step = s.listeners_opened(LATER, step)
        sent.append(joined(step.to_client))
        if step.close is not None:
            break
    assert step is not None
    return sent, step


RECORDS = [bytes(range(256)) * 2, b"\x01" * 300]
