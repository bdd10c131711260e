"""What a connection's transports hold in their write buffers: how much before kproxy
stops reading the other side (`limits.write_buffer_high_bytes`), and a step's pieces
written without copying them twice.

The standard asyncio loop's plaintext socket transport, before Python 3.12, copies every
byte it cannot send at once into a buffer of its own. When a broker reads more slowly
than its producers write (acks=all), that is most of a large produce request: a copy of
every byte in user space, about 15% of kproxy's CPU per GB on that loop. There kproxy
stops reading at `COPYING_TRANSPORT_HIGH` already, so the bytes wait in the kernel's
socket buffers instead, as they do behind haproxy's 16 KiB buffers. uvloop (and Python
3.12's transport) keep what they cannot send by reference: a larger buffer costs them no
copy, and a smaller one more pauses, so they use the configured bound.

A step's pieces (a size, a rewritten header, slices of what was read): the same
transport's `writelines` joins them into one new bytes object before `write` copies that
into its buffer, so every byte of a large request streamed to a busy broker was copied
twice. `write_pieces` puts them one by one into a buffer that already holds data, and
joins them only when the socket is empty, so that they leave in one send (a 4-byte size
alone would be a packet of its own: kproxy sets TCP_NODELAY). uvloop's `writelines`
sends them with one writev and keeps what it cannot send by reference; TLS transports
would make each piece a record of its own: those keep `writelines`.
"""

from __future__ import annotations

import asyncio
import asyncio.selector_events
import sys
from collections.abc import Sequence
from typing import Final

# Measured with `python -m bench ab kafka-produce-1KiB --standard-loop --baseline REV`:
# CPU per message 0.85 of the 4 MiB bound's at 64 KiB, 0.90 at 16 KiB, 0.94 at 256 KiB.
COPYING_TRANSPORT_HIGH: Final = 65536

# A private name of asyncio's, read once: should a Python release rename it, kproxy uses
# the configured bound everywhere, and nothing breaks.
COPYING_TRANSPORT: Final[type | None] = (
    getattr(asyncio.selector_events, "_SelectorSocketTransport", None)
    if sys.version_info < (3, 12)
    else None
)


def limit_write_buffer(transport: asyncio.WriteTransport, configured: int) -> None:
    """Set `transport`'s high-water mark: `configured`, or less where buffering copies."""
    if type(transport) is COPYING_TRANSPORT:
        configured = min(configured, COPYING_TRANSPORT_HIGH)
    transport.set_write_buffer_limits(high=configured)


def write_pieces(transport: asyncio.Transport, pieces: Sequence[bytes | memoryview]) -> None:
    """Write `pieces` in order: on a `COPYING_TRANSPORT` each byte copied at most once,
    on any other with its `writelines`."""
    if type(transport) is not COPYING_TRANSPORT:
        transport.writelines(pieces)
    elif len(pieces) == 1 or transport.get_write_buffer_size():
        for piece in pieces:
            transport.write(piece)
    else:
        transport.write(b"".join(pieces))
