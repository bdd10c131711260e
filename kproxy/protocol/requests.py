"""The few request fields the proxy needs beyond the header."""

from __future__ import annotations

import struct

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.primitives import int16_in, read_uvarint


def produce_acks(frame: bytes | memoryview, body_offset: int, stop: int, version: int) -> int:
    """ProduceRequest.Acks: v0-2 it comes first; v3+ after the nullable TransactionalId,
    in the request whose frame ends at `stop` of `frame`.

    acks=0 means the broker sends no response, so the request must not wait in the
    correlation table. Read byte by byte, no struct call and no tuple; each byte is
    read before the position moves past it, so acks found before `stop` were read
    from nothing beyond it (in a read of several frames, the next one).
    """
    try:
        pos = body_offset
        if version >= 9:  # flexible: a compact nullable string, its length plus one
            n = frame[pos]
            if n < 0x80:  # one byte: null (0) or shorter than 127
                pos += n or 1
            else:
                n, pos = read_uvarint(frame, pos)
                pos += (n or 1) - 1
        elif version >= 3:
            n = int16_in(frame, pos)  # negative: a null id
            pos += 2
            if n > 0:
                pos += n
        if pos + 2 > stop:
            raise MalformedMessage("produce request truncated before acks")
        # int16_in, inline: read for every Produce request the fast lane takes.
        acks: int = frame[pos] << 8 | frame[pos + 1]
        return acks - 0x10000 if acks >= 0x8000 else acks
    except IndexError as exc:  # the frame ends inside the transactional id's length
        raise MalformedMessage(f"malformed produce request: {exc}") from exc


def metadata_v1_request(correlation_id: int, client_id: bytes = b"kproxy") -> bytes:
    """A whole Metadata v1 request frame asking for no topics: just the brokers.

    v1 is served by every broker from Kafka 0.10 to 4.x, and its response (header v0,
    no tagged fields) is the simplest one that names every broker.
    """
    # Topics: an empty array (null would mean all topics).
    return request_frame(3, 1, correlation_id, client_id, struct.pack(">i", 0))


def request_frame(
    api_key: int, version: int, correlation_id: int, client_id: bytes, body: bytes
) -> bytes:
    """A whole frame of one of kproxy's own requests: size, request header v1 (api key,
    version, correlation id, client id; no tagged fields), body."""
    payload = struct.pack(">hhih", api_key, version, correlation_id, len(client_id))
    payload += client_id + body
    return struct.pack(">i", len(payload)) + payload
