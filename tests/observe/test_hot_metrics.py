"""The scrape-time counts of `kproxy.observe.hot_metrics` give exactly the samples that
prometheus_client's own counters and histograms, updated call by call, gave for the same
traffic: names, labels, bucket bounds, counts and sums (streamed responses' counts too)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram

from kproxy.observe.hot_metrics import HotPathMetrics
from kproxy.observe.metric_specs import (
    BYTES,
    FRAMES,
    LATENCY_BUCKETS,
    REQUEST_DURATION,
    RESPONSES_STREAMED,
    UPSTREAM_DURATION,
)
from kproxy.observe.metrics import KproxyMetrics
from kproxy.protocol.apis import api_name
from kproxy.session.inflight import response_seen

FRAME = st.tuples(
    st.just("frame"),
    st.sampled_from([0, 1, 3, 18, 19, 71]),
    st.sampled_from(["request", "response"]),
    st.integers(0, 1 << 24),
)
# Latencies on and around the bucket bounds (a bound belongs to its own bucket), and
# beyond the last one.
SECONDS = st.one_of(
    st.sampled_from(LATENCY_BUCKETS),
    st.floats(0, 60, allow_nan=False),
    st.sampled_from([0.0, 1e-9, 0.00049999, 0.00050001, 1e6]),
)
RESPONSE = st.tuples(st.just("response"), st.sampled_from([0, 1, 3, 18]), SECONDS, SECONDS)
STREAMED = st.tuples(
    st.just("streamed"),
    st.sampled_from([1, 78, 79, 3]),
    st.sampled_from(["none", "rewritten", "padded", "dropped"]),
)


def per_call_registry(calls: list[tuple[object, ...]]) -> CollectorRegistry:
    """The families as prometheus_client updates them on every call."""
    reg = CollectorRegistry()
    frames = Counter(FRAMES.name, FRAMES.help, FRAMES.labels, registry=reg)
    sizes = Counter(BYTES.name, BYTES.help, BYTES.labels, registry=reg)
    total = Histogram(REQUEST_DURATION.name, REQUEST_DURATION.help, REQUEST_DURATION.labels,
                      registry=reg, buckets=REQUEST_DURATION.buckets)  # fmt: skip
    upstream = Histogram(UPSTREAM_DURATION.name, UPSTREAM_DURATION.help, UPSTREAM_DURATION.labels,
                         registry=reg, buckets=UPSTREAM_DURATION.buckets)  # fmt: skip
    streamed = Counter(RESPONSES_STREAMED.name, RESPONSES_STREAMED.help, RESPONSES_STREAMED.labels,
                       registry=reg)  # fmt: skip
    for call in calls:
        if call[0] == "streamed":
            _, key, tail = call
            streamed.labels(api_name(key), tail).inc()  # type: ignore[arg-type]
        elif call[0] == "frame":
            _, key, direction, size = call
            frames.labels(api_name(key), direction).inc()  # type: ignore[arg-type]
            sizes.labels(api_name(key), direction).inc(size)  # type: ignore[arg-type]
        else:
            _, key, t, u = call
            total.labels(api_name(key)).observe(t)  # type: ignore[arg-type]
            upstream.labels(api_name(key)).observe(u)  # type: ignore[arg-type]
    return reg


def samples(reg: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in reg.collect():
        for s in family.samples:
            if s.name.endswith("_created"):
                continue
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def assert_same_samples(hot: HotPathMetrics, calls: list[tuple[object, ...]]) -> None:
    reg = CollectorRegistry()
    reg.register(hot)
    expected = samples(per_call_registry(calls))
    got = samples(reg)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == value or abs(got[key] - value) <= 1e-9 * max(1.0, abs(value)), key


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(FRAME, RESPONSE, STREAMED), max_size=60))
def test_scrape_time_counts_equal_per_call_families(calls: list[tuple[object, ...]]) -> None:
    hot = HotPathMetrics()
    for call in calls:
        if call[0] == "streamed":
            hot.response_streamed(*call[1:])  # type: ignore[arg-type]
        elif call[0] == "frame":
            hot.frame(*call[1:])  # type: ignore[arg-type]
        else:
            hot.response(*call[1:])  # type: ignore[arg-type]
    assert_same_samples(hot, calls)


def test_kproxy_metrics_expose_the_hot_families_once() -> None:
    m = KproxyMetrics(runtime_collectors=False)
    m.frame(0, "request", 10)
    m.response(0, 0.001, 0.0005)
    m.hot.response_streamed(1, "padded")
    text = m.exposition()[0].decode()
    assert text.count("# TYPE kproxy_frames_total counter") == 1
    assert text.count("# TYPE kproxy_responses_streamed_total counter") == 1
    assert m.value("kproxy_responses_streamed_total", {"api": "Fetch", "tail": "padded"}) == 1
    assert 'kproxy_request_duration_seconds_bucket{api="Produce",le="0.001"} 1.0' in text
    assert 'kproxy_upstream_duration_seconds_bucket{api="Produce",le="0.0005"} 1.0' in text
    assert m.value("kproxy_bytes_total", {"api": "Produce", "direction": "request"}) == 10


REQUESTS = st.lists(st.tuples(st.sampled_from([0, 1, 3, 18]), st.integers(0, 1 << 24)))
RESPONSES = st.lists(
    st.tuples(st.sampled_from([0, 1, 3, 18]), st.integers(0, 1 << 24), SECONDS, SECONDS)
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(REQUESTS, RESPONSES, st.floats(0, 1e5)), max_size=12))
def test_what_one_read_forwarded_counts_as_its_frames_did_one_by_one(
    reads: list[tuple[list[tuple[int, int]], list[tuple[int, int, float, float]], float]],
) -> None:
    """The runtime hands the metrics what a read forwarded in one call each way
    (`requests`, `responses`): the samples are those of a call per frame."""
    hot = HotPathMetrics()
    calls: list[tuple[object, ...]] = []
    for requests, responses, done in reads:
        hot.requests(requests)
        calls += [("frame", key, "request", size) for key, size in requests]
        seen = [
            response_seen(key, 0, None, size, done - total, upstream, None, frozenset(), 0, 0)
            for key, size, total, upstream in responses
        ]
        hot.responses(seen, done)
        for s in seen:
            calls.append(("frame", s.api_key, "response", s.size))
            calls.append(("response", s.api_key, done - s.received, s.upstream_seconds))
    assert_same_samples(hot, calls)
