"""A yardstick for `bench.session_bench`: the least Python a small Produce round trip
needs, written as one function per direction with nothing general about it.

It does what kproxy must do for such a pair and no more: check the request's frame
size, read its header (api key, version, correlation id, client id) and its acks,
record it as in flight, count it and write it; then check the response's size, find
its request, scan it for an error or a leader hint (kproxy's own
`produce_response_is_plain`), count it, put its two latencies in histogram buckets and
write it. No limits, no policy, no other API, no streaming, no observer: it is not a
proxy, only the figure kproxy's per-pair Python could approach with a path fused for
this one case.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections.abc import Callable

from kproxy.observe.metric_specs import REQUEST_DURATION
from kproxy.protocol.produce_scan import produce_response_is_plain

_request_head = struct.Struct(">ihhih").unpack_from  # size, key, version, correlation, client id
_response_head = struct.Struct(">ii").unpack_from  # size, correlation id
_int16 = struct.Struct(">h").unpack_from


class _Drop:
    def writelines(self, chunks: object) -> None:
        pass


def least_pair(request: bytes, response: bytes) -> Callable[[], object]:
    """A Produce v9+ request (header v2) and its response, one pair per call."""
    inflight: dict[int, tuple[int, int, str, float]] = {}
    counts = [0, 0, 0, 0]  # requests, request bytes, responses, response bytes
    bounds = REQUEST_DURATION.buckets
    total_buckets = [0] * (len(bounds) + 1)
    upstream_buckets = [0] * (len(bounds) + 1)
    to_upstream, to_client = _Drop(), _Drop()

    def forward_request(data: bytes, now: float) -> None:
        size, key, version, correlation, n = _request_head(data, 0)
        if size != len(data) - 4:
            raise ValueError("not one whole frame")
        client_id = str(memoryview(data)[14 : 14 + n], "utf-8")
        pos = 14 + n + 1  # the header's empty tagged fields
        pos += data[pos] or 1  # the transactional id: a compact nullable string (0: null)
        acks = _int16(data, pos)[0]
        if acks != 0:
            inflight[correlation] = (key, version, client_id, now)
        counts[0] += 1
        counts[1] += len(data)
        to_upstream.writelines((data,))

    def forward_response(data: bytes, now: float) -> None:
        size, correlation = _response_head(data, 0)
        if size != len(data) - 4:
            raise ValueError("not one whole frame")
        _key, version, _client_id, received = inflight.pop(correlation)
        # Response header v1: the correlation id and an empty tagged-field byte.
        if not produce_response_is_plain(data, 9, len(data), version):
            raise ValueError("a response kproxy would walk")
        counts[2] += 1
        counts[3] += len(data)
        total = upstream = now - received
        total_buckets[bisect_left(bounds, total)] += 1
        upstream_buckets[bisect_left(bounds, upstream)] += 1
        to_client.writelines((data,))

    def run() -> object:
        forward_request(request, 1.0)
        forward_response(response, 1.001)
        return None

    return run
