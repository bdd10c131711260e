"""The metrics every frame and response updates (and every response streamed), kept as
plain counts and made into Prometheus samples only when /metrics is scraped.

prometheus_client's counters and histograms take a lock and walk their value objects on
every `inc()` and `observe()` (1.5-4 us each); a request and its response made six such
calls. Here a frame costs a dict lookup and two integer additions, a response two
comparisons (or bucket searches). Everything runs on the event loop's thread, scrapes
included (the admin server shares the loop), so the counts need no lock.

The samples are the ones the per-call families gave: the same names, labels, help and
buckets (`kproxy.observe.metric_specs`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Final

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from kproxy.observe.metric_specs import (
    BYTES,
    FRAMES,
    REQUEST_DURATION,
    RESPONSES_STREAMED,
    UPSTREAM_DURATION,
    MetricSpec,
)
from kproxy.protocol.apis import api_name

if TYPE_CHECKING:
    from kproxy.session.inflight import ResponseSeen

__all__ = ["HOT_PATH_SPECS", "HotPathMetrics"]

HOT_PATH_SPECS = (FRAMES, BYTES, REQUEST_DURATION, UPSTREAM_DURATION, RESPONSES_STREAMED)
REQUEST: Final = "request"  # the two values of kproxy_frames_total's `direction`
RESPONSE: Final = "response"


class _ApiTraffic:
    """One API's frames and bytes each way and its two latency histograms (per-bucket
    counts, not cumulative, the last one +Inf; and the sums): one object per API, so
    that a response updates one object, found by one dict lookup (native integers and
    floats when compiled)."""

    __slots__ = (
        "request_bytes",
        "request_frames",
        "response_bytes",
        "response_frames",
        "total_buckets",
        "total_sum",
        "upstream_buckets",
        "upstream_sum",
    )

    def __init__(self, buckets: int) -> None:
        self.request_frames = 0
        self.request_bytes = 0
        self.response_frames = 0
        self.response_bytes = 0
        self.total_buckets = [0] * (buckets + 1)
        self.upstream_buckets = [0] * (buckets + 1)
        self.total_sum = 0.0
        self.upstream_sum = 0.0

    @property
    def timed(self) -> bool:
        """Whether a response's latencies were observed (its histograms have samples)."""
        return any(self.total_buckets)


class HotPathMetrics(Collector):
    """kproxy_frames_total, kproxy_bytes_total, kproxy_request_duration_seconds,
    kproxy_upstream_duration_seconds and kproxy_responses_streamed_total."""

    def __init__(self) -> None:
        # api key -> its traffic: an int key, no tuple to build and hash on every frame.
        self.apis: dict[int, _ApiTraffic] = {}
        # (api key, what the tail became) -> responses: a consumer's every large Fetch
        # response is streamed, and a labelled counter took a lock and a label lookup
        # for each.
        self.streamed: dict[tuple[int, str], int] = {}
        self.bounds = list(REQUEST_DURATION.buckets)
        self.first_bound = self.bounds[0]
        if UPSTREAM_DURATION.buckets != REQUEST_DURATION.buckets:
            raise ValueError("the two latency histograms must share their buckets")

    # -- the hot path ------------------------------------------------------------------
    def requests(self, requests: Iterable[tuple[int, int]]) -> None:
        """Request frames of (api key, size) forwarded: one call for what a read sent."""
        apis = self.apis
        for api_key, size in requests:
            # `request`, inline: this runs for every read of a busy client.
            traffic = apis.get(api_key)
            if traffic is None:
                traffic = self._traffic(api_key)
            traffic.request_frames += 1
            traffic.request_bytes += size

    def responses(self, responses: Iterable[ResponseSeen], done: float) -> None:
        """Each response's frame and latencies, all written to the client at `done`: one
        call for what a read from the broker released."""
        for seen in responses:
            self.response_out(seen.api_key, seen.size, done - seen.received, seen.upstream_seconds)

    def _traffic(self, api_key: int) -> _ApiTraffic:
        """The API's record, made at its first frame."""
        traffic = self.apis.get(api_key)
        if traffic is None:
            traffic = self.apis[api_key] = _ApiTraffic(len(self.bounds))
        return traffic

    def request(self, api_key: int, size: int) -> None:
        """One request frame forwarded: for every request (the record read inline)."""
        traffic = self.apis.get(api_key)
        if traffic is None:
            traffic = self._traffic(api_key)
        traffic.request_frames += 1
        traffic.request_bytes += size

    def frame(self, api_key: int, direction: str, size: int) -> None:
        if direction == REQUEST:
            self.request(api_key, size)
        elif direction == RESPONSE:
            traffic = self._traffic(api_key)
            traffic.response_frames += 1
            traffic.response_bytes += size
        else:
            raise ValueError(f"unknown frame direction {direction!r}")

    def response(self, api_key: int, total_seconds: float, upstream_seconds: float) -> None:
        """One response's latencies (its frame counted by `frame`)."""
        traffic = self._traffic(api_key)
        bounds = self.bounds
        traffic.total_buckets[bisect_left(bounds, total_seconds)] += 1
        traffic.total_sum += total_seconds
        traffic.upstream_buckets[bisect_left(bounds, upstream_seconds)] += 1
        traffic.upstream_sum += upstream_seconds

    def response_out(
        self, api_key: int, size: int, total_seconds: float, upstream_seconds: float
    ) -> None:
        """One response frame written to the client and its latencies: `frame` and
        `response` in one call, for every response, each latency in the first bucket
        whose bound is >= it (a bucket counts values <= its bound; the last, +Inf, the
        rest), as `response` puts it. Most latencies through a proxy fall in the first
        bucket (0.5 ms): one comparison finds that, and `bisect_left` the others."""
        traffic = self.apis.get(api_key)
        if traffic is None:
            traffic = self._traffic(api_key)
        traffic.response_frames += 1
        traffic.response_bytes += size
        first = self.first_bound
        if total_seconds <= first:
            traffic.total_buckets[0] += 1
        else:
            traffic.total_buckets[bisect_left(self.bounds, total_seconds)] += 1
        traffic.total_sum += total_seconds
        if upstream_seconds <= first:
            traffic.upstream_buckets[0] += 1
        else:
            traffic.upstream_buckets[bisect_left(self.bounds, upstream_seconds)] += 1
        traffic.upstream_sum += upstream_seconds

    def response_streamed(self, api_key: int, tail: str) -> None:
        """A response forwarded as it arrived; `tail` is what its tail became."""
        key = (api_key, tail)
        self.streamed[key] = self.streamed.get(key, 0) + 1

    # -- a scrape ----------------------------------------------------------------------
    def collect(self) -> Iterator[Metric]:
        frames = _counter(FRAMES)
        sizes = _counter(BYTES)
        total = _histogram(REQUEST_DURATION)
        upstream = _histogram(UPSTREAM_DURATION)
        rows: list[tuple[int, str, int, int]] = []
        for api_key, t in self.apis.items():
            if t.request_frames:
                rows.append((api_key, REQUEST, t.request_frames, t.request_bytes))
            if t.response_frames:
                rows.append((api_key, RESPONSE, t.response_frames, t.response_bytes))
        for api_key, direction, count, size in sorted(rows, key=lambda row: row[:2]):
            labels = [api_name(api_key), direction]
            frames.add_metric(labels, count)
            sizes.add_metric(labels, size)
        for api_key, t in sorted(self.apis.items()):
            if not t.timed:
                continue
            labels = [api_name(api_key)]
            total.add_metric(labels, self._cumulative(t.total_buckets), sum_value=t.total_sum)
            upstream.add_metric(
                labels, self._cumulative(t.upstream_buckets), sum_value=t.upstream_sum
            )
        streamed = _counter(RESPONSES_STREAMED)
        for (api_key, tail), count in sorted(self.streamed.items()):
            streamed.add_metric([api_name(api_key), tail], count)
        yield from (frames, sizes, total, upstream, streamed)

    def describe(self) -> Iterator[Metric]:
        # Names only, so that registering checks them against every other family's.
        yield from (_counter(FRAMES), _counter(BYTES))
        yield from (_histogram(REQUEST_DURATION), _histogram(UPSTREAM_DURATION))
        yield _counter(RESPONSES_STREAMED)

    def _cumulative(self, counts: list[int]) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        running = 0
        labels = (*map(floatToGoString, self.bounds), "+Inf")
        for bound, count in zip(labels, counts, strict=True):
            running += count
            out.append((bound, running))
        return out


def _counter(spec: MetricSpec) -> CounterMetricFamily:
    # The family is named without `_total`: prometheus_client adds it to the sample.
    return CounterMetricFamily(spec.name.removesuffix("_total"), spec.help, labels=spec.labels)


def _histogram(spec: MetricSpec) -> HistogramMetricFamily:
    return HistogramMetricFamily(spec.name, spec.help, labels=spec.labels)
