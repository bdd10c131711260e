"""Messages sent on a fixed schedule, each no sooner than it is due: the fixed-rate
load (`bench.clients` rate) and the soak's producer (`bench.soak_traffic`) send this
way, and time each message from when it was due, so that a stall counts for every
message it held back (coordinated omission avoided)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def send_on_schedule(
    producer: Any, count: int, rate: float, send: Callable[[int, float], None]
) -> float:
    """``send(i, due)`` for ``i`` in ``range(count)``, the i-th due ``i / rate`` seconds
    after the start (``due`` on the `time.perf_counter` clock); returns the start.

    Messages due are sent at each wakeup; a full client queue (`BufferError` from
    ``send``) is served and the message sent again. Between wakeups ``producer`` serves
    acknowledgements until the next message is due."""
    interval = 1.0 / rate
    start = time.perf_counter()
    sent = 0
    while sent < count:
        at = time.perf_counter()
        while sent < count and start + sent * interval <= at:
            try:
                send(sent, start + sent * interval)
            except BufferError:
                break  # the client's queue is full: served below, then again
            sent += 1
        producer.poll(0)
        wait = start + sent * interval - time.perf_counter()
        if wait > 0.001:
            producer.poll(wait)  # whole milliseconds: serves acknowledgements meanwhile
        elif wait > 0:
            time.sleep(wait)  # poll() would round it to 0 ms and spin
    return start
