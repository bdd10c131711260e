"""Client quotas measured and decided as a broker does (`kproxy.session.quota`): Kafka's
sampled rate, KIP-13's throttle, the most specific entry winning, per-client rates."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproxy.protocol.apis import FETCH, PRODUCE
from kproxy.session.quota import QuotaBook, QuotaRule, SampledRate

HEARTBEAT = 12


def rule(label: str, client_id: str | None = None, network: str | None = None,
         produce: float | None = None, fetch: float | None = None,
         requests: float | None = None) -> QuotaRule:  # fmt: skip
    return QuotaRule(label, client_id, network, (produce, fetch, requests))


def test_a_rate_spreads_a_first_burst_over_all_but_one_window() -> None:
    rate = SampledRate(1.0, 11)
    rate.record(10_000, 100.2)
    assert rate.measure(100.3) == pytest.approx((1_000, 10.0))
    # Windows older than the samples drop out; the span grows with the oldest kept.
    rate.record(5_000, 110.5)
    assert rate.measure(110.6)[1] == pytest.approx(10.6)
    assert rate.measure(111.5)[0] == pytest.approx(5_000 / 10.0)


def test_the_most_specific_entry_holds() -> None:
    book = QuotaBook(
        [
            rule("default", produce=1),
            rule("net8", network="10.0.0.0/8", produce=2),
            rule("net24", network="10.1.2.0/24", produce=3),
            rule("app", client_id="app", produce=4),
            rule("app-net", client_id="app", network="10.1.0.0/16", produce=5),
        ],
        1.0,
        11,
    )

    def label(client_id: str | None, host: str | None) -> str:
        bucket = book.bucket(client_id, host, 0.0)
        assert bucket is not None
        return bucket.rule.label

    assert label("app", "10.1.2.3") == "app-net"
    assert label("app", "192.168.0.1") == "app"
    assert label("other", "10.1.2.3") == "net24"
    assert label("other", "10.9.9.9") == "net8"
    assert label(None, "not an address") == "default"
    assert (
        QuotaBook([rule("only-app", client_id="app", produce=1)], 1.0, 11).bucket(
            "other", "10.0.0.1", 0.0
        )
        is None
    )


def test_a_client_id_entry_is_shared_and_the_default_is_per_client() -> None:
    book = QuotaBook([rule("app", client_id="app", produce=1), rule("d", produce=1)], 1.0, 11)
    assert book.bucket("app", "10.0.0.1", 0.0) is book.bucket("app", "10.0.0.2", 0.0)
    assert book.bucket("a", "10.0.0.1", 0.0) is not book.bucket("b", "10.0.0.1", 0.0)
    net = QuotaBook([rule("net", network="10.0.0.0/8", requests=1)], 1.0, 11)
    assert net.bucket("a", "10.0.0.1", 0.0) is net.bucket("b", "10.0.0.1", 0.0)
    assert net.bucket("a", "10.0.0.1", 0.0) is not net.bucket("a", "10.0.0.2", 0.0)


def test_a_client_over_its_produce_quota_is_throttled_as_kip_13_says() -> None:
    book = QuotaBook([rule("app", client_id="app", produce=1000)], 1.0, 11)
    bucket = book.bucket("app", None, 0.0)
    assert bucket is not None
    assert bucket.charge([(PRODUCE, 5_000)], 50.5) == 0  # 500 B/s over the 10 s span
    # 20,000 B over the 10 s span: (2000 - 1000) / 1000 * 10 s = 10 s.
    ms = bucket.charge([(PRODUCE, 15_000)], 51.0)
    assert ms == 10_000
    assert bucket.stats.throttle_seconds[0] == pytest.approx(10.0)
    assert bucket.stats.bytes == [20_000, 0] and bucket.stats.requests == 2
    assert book.throttled(52.0) == [
        {"quota": "app", "client_id": "app", "client_address": None, "seconds_left": 9.0}
    ]
    # Requests of other kinds cost nothing against a produce quota (still over it).
    assert bucket.charge([(HEARTBEAT, 50)], 51.0) == 10_000


def test_a_fetch_response_is_throttled_for_its_own_bytes() -> None:
    book = QuotaBook([rule("d", fetch=100)], 1.0, 3)
    bucket = book.bucket("c", None, 0.0)
    assert bucket is not None and bucket.limits_fetch
    assert bucket.charge([(FETCH, 80)], 10.0) == 0  # a Fetch request is not fetched bytes
    assert bucket.fetched(150, 10.1) == 0  # 150 B over the 2 s span: 75 B/s
    # 300 B: 150 B/s, (150 - 100) / 100 * 2 s = 1 s
    assert bucket.fetched(150, 10.2) == 1_000
    assert bucket.stats.bytes == [0, 300]


def test_a_request_rate_quota_counts_every_request() -> None:
    book = QuotaBook([rule("d", requests=2)], 1.0, 2)
    bucket = book.bucket(None, None, 0.0)
    assert bucket is not None
    assert bucket.charge([(HEARTBEAT, 40)] * 2, 5.0) == 0
    assert bucket.charge([(HEARTBEAT, 40)] * 4, 5.5) > 0


def test_a_reload_starts_every_rate_afresh_and_keeps_the_counts() -> None:
    book = QuotaBook([rule("app", client_id="app", produce=1000)], 1.0, 11)
    old = book.bucket("app", None, 0.0)
    assert old is not None and old.charge([(PRODUCE, 50_000)], 1.0) > 0
    book.configure([rule("app", client_id="app", produce=1e9)], 1.0, 11)
    assert old.retired
    new = book.bucket("app", None, 2.0)
    assert new is not None and new is not old and new.charge([(PRODUCE, 50_000)], 2.0) == 0
    assert book.stats["app"].bytes[0] == 100_000
    book.configure([], 1.0, 11)
    assert not book.active and book.bucket("app", None, 3.0) is None


def test_rates_idle_for_a_span_are_let_go() -> None:
    book = QuotaBook([rule("d", produce=1)], 1.0, 2)
    for i in range(1023):
        book.bucket(f"client-{i}", None, 0.0)
    book.bucket("late", None, 100.0)  # the 1,024th new rate sweeps the idle ones
    assert len(book._buckets) <= 2


@given(
    st.lists(st.tuples(st.floats(0, 5_000), st.floats(0, 0.7)), max_size=60),
    st.floats(1, 3_000),
)
def test_below_never_says_so_of_a_rate_over_the_limit(
    records: list[tuple[float, float]], limit: float
) -> None:
    """The shortcut that spares a client far below its quota the measure."""
    rate = SampledRate(0.5, 5)
    now = 100.0
    for value, gap in records:
        now += gap
        rate.record(value, now)
        if rate.below(limit):
            assert rate.measure(now)[0] <= limit * (1 + 1e-9)
