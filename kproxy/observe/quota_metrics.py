"""The client quotas' metrics, read from the quota book at scrape time: the connections
only count into plain numbers (`kproxy.session.quota.QuotaStats`), one per entry, so
the labels are bounded by the configured entries."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kproxy.observe.metric_specs import QUOTA_BYTES, QUOTA_LIMIT, QUOTA_REQUESTS, QUOTA_THROTTLE
from kproxy.session.quota import KINDS, QuotaBook

QUOTA_SPECS = (QUOTA_THROTTLE, QUOTA_BYTES, QUOTA_REQUESTS, QUOTA_LIMIT)


class QuotaMetrics(Collector):
    """Samples of `QUOTA_SPECS` for the book `kproxy.runtime.proxy` configured."""

    def __init__(self) -> None:
        self.book: QuotaBook | None = None

    def collect(self) -> Iterator[Metric]:
        throttle = CounterMetricFamily(
            QUOTA_THROTTLE.name.removesuffix("_total"),
            QUOTA_THROTTLE.help,
            labels=["quota", "kind"],
        )
        sizes = CounterMetricFamily(
            QUOTA_BYTES.name.removesuffix("_total"), QUOTA_BYTES.help, labels=["quota", "kind"]
        )
        requests = CounterMetricFamily(
            QUOTA_REQUESTS.name.removesuffix("_total"), QUOTA_REQUESTS.help, labels=["quota"]
        )
        limit = GaugeMetricFamily(QUOTA_LIMIT.name, QUOTA_LIMIT.help, labels=["quota", "kind"])
        book = self.book
        for label, stats in sorted(book.stats.items()) if book is not None else ():
            for kind, seconds, rate in zip(
                KINDS, stats.throttle_seconds, stats.limits, strict=True
            ):
                throttle.add_metric([label, kind], seconds)
                if rate is not None:
                    limit.add_metric([label, kind], rate)
            for kind, count in zip(KINDS, stats.bytes, strict=False):
                sizes.add_metric([label, kind], count)
            requests.add_metric([label], stats.requests)
        yield from (throttle, sizes, requests, limit)
