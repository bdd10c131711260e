"""Client quotas, measured and enforced as a broker does its own (sans-IO).

A rate is Kafka's: the sum of `samples` windows of `window` seconds over the time they
span, at least all but one full window (a client's first burst is spread over that
span, not over the milliseconds it took). A client over its quota is throttled for the
time that brings its rate back to the quota, `(rate - quota) / quota * span` (KIP-13's
formula): kproxy sets that in the `throttle_time_ms` of the response
that answers the request (KIP-219: the response goes at once, the client waits) and
stops reading the client's connection for as long, so that a client that ignores it
gains nothing.

Which quota holds for a client is the most specific entry that matches it, as Kafka's
quota entities are chosen: client id and address, then client id, then address (the
longest network first), then the default. An entry with a client id is shared by every
connection naming it; an address entry or the default keeps a rate per address or per
client id, as Kafka's default entities do. Rates idle for a whole span are let go, so a
client that names a new client id on every connection costs one rate per id for at
most a span.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from kproxy.protocol.apis import PRODUCE

MAX_THROTTLE_SECONDS = 2_000_000.0  # throttle_time_ms is an int32
KINDS = ("produce", "fetch", "requests")
_SWEEP_EVERY = 1024  # new rates between two sweeps of idle ones


class QuotaRule:
    """One quota (the `quotas.entries` setting): whom it matches and its rates per
    second (None: not limited)."""

    __slots__ = ("client_id", "label", "limits", "network")

    def __init__(
        self,
        label: str,
        client_id: str | None,
        network: str | None,
        limits: tuple[float | None, float | None, float | None],
    ) -> None:
        self.label = label
        self.client_id = client_id
        self.network = None if network is None else ipaddress.ip_network(network)
        self.limits = limits  # produce bytes, fetch bytes, requests (KINDS)

    def specificity(self) -> tuple[bool, bool, int]:
        prefix = -1 if self.network is None else self.network.prefixlen
        return (self.client_id is not None, self.network is not None, prefix)


class SampledRate:
    """Kafka's `Rate` over a `SampledStat`: a ring of windows, each with its total."""

    __slots__ = ("_epochs", "_min_span", "_values", "ring_total", "samples", "window")

    def __init__(self, window: float, samples: int) -> None:
        self.window = window
        self.samples = samples
        self._epochs = [-samples] * samples  # which window each slot holds
        self._values = [0.0] * samples
        # Every slot's total, expired windows included: an upper bound of what `measure`
        # counts, kept as values come, so that a client far below its quota costs no
        # walk over the windows (`below`).
        self.ring_total = 0.0
        self._min_span = (samples - 1) * window

    def record(self, value: float, now: float) -> None:
        epoch = int(now // self.window)
        slot = epoch % self.samples
        if self._epochs[slot] != epoch:
            self._epochs[slot] = epoch
            self.ring_total -= self._values[slot]
            self._values[slot] = 0.0
        self._values[slot] += value
        self.ring_total += value

    def below(self, limit: float) -> bool:
        """Whether the rate is surely at most `limit`, without measuring it: the ring's
        total over the shortest span a measure divides by."""
        return self.ring_total <= limit * self._min_span

    def measure(self, now: float) -> tuple[float, float]:
        """(rate per second, the span it was measured over)."""
        epoch = int(now // self.window)
        total, oldest = 0.0, epoch
        for at, value in zip(self._epochs, self._values, strict=True):
            if epoch - at < self.samples:
                total += value
                oldest = min(oldest, at)
        span = max(now - oldest * self.window, (self.samples - 1) * self.window)
        return total / span, span


class QuotaBucket:
    """The rates of one client (or of every client sharing an entry) under one entry."""

    __slots__ = ("budgets", "last_used", "rates", "retired", "rule", "stats", "throttled_until")

    def __init__(self, rule: QuotaRule, stats: QuotaStats, window: float, samples: int) -> None:
        self.rule = rule
        self.stats = stats
        self.rates = [
            None if limit is None else SampledRate(window, samples) for limit in rule.limits
        ]
        # What a rate's windows may hold at most before it can be over its limit
        # (`SampledRate.below`, read inline: every request of a client under a quota).
        self.budgets = [
            0.0 if limit is None else limit * (samples - 1) * window for limit in rule.limits
        ]
        self.last_used = 0.0
        self.throttled_until = 0.0
        self.retired = False  # a reload replaced its rule: sessions look theirs up again

    def charge(self, requests: Iterable[tuple[int, int]], now: float) -> int:
        """Record requests on their way to the broker, as (api key, frame size): the
        throttle they earn in milliseconds (0: none)."""
        self.last_used = now
        produce, _, count = self.rates
        stats = self.stats
        n = 0
        for key, size in requests:
            n += 1
            if key == PRODUCE:
                stats.bytes[0] += size
                if produce is not None:
                    produce.record(size, now)
        stats.requests += n
        if count is not None:
            count.record(n, now)
        ms = 0
        produce_budget, _, count_budget = self.budgets
        if produce is not None and produce.ring_total > produce_budget:
            ms = self._throttle(0, produce, now)
        if count is not None and count.ring_total > count_budget:
            ms = max(ms, self._throttle(2, count, now))
        return ms

    @property
    def limits_fetch(self) -> bool:
        return self.rates[1] is not None

    def fetched(self, size: int, now: float) -> int:
        """A Fetch response of `size` bytes is on its way to the client: the throttle it
        earns in milliseconds, to be carried by that very response (KIP-219)."""
        self.last_used = now
        self.stats.bytes[1] += size
        fetch = self.rates[1]
        if fetch is None:
            return 0
        fetch.record(size, now)
        return 0 if fetch.ring_total <= self.budgets[1] else self._throttle(1, fetch, now)

    def _throttle(self, kind: int, rate: SampledRate, now: float) -> int:
        limit = self.rule.limits[kind]
        assert limit is not None
        observed, span = rate.measure(now)
        if observed <= limit:
            return 0
        # Not capped: a client that sent far over its quota at once (a burst its client
        # queued while throttled) waits until its rate is back at the quota.
        seconds = min((observed - limit) / limit * span, MAX_THROTTLE_SECONDS)
        self.stats.throttle_seconds[kind] += seconds
        self.throttled_until = max(self.throttled_until, now + seconds)
        return max(1, round(seconds * 1000))


class QuotaStats:
    """One entry's counts over all its clients, for metrics (bounded by the entries)."""

    __slots__ = ("bytes", "label", "limits", "requests", "throttle_seconds")

    def __init__(self, rule: QuotaRule) -> None:
        self.label = rule.label
        self.limits = rule.limits
        self.bytes = [0, 0]  # produce, fetch
        self.requests = 0
        self.throttle_seconds = [0.0, 0.0, 0.0]  # by KINDS


class QuotaBook:
    """Every quota entry, their clients' rates, and which entry holds for a client."""

    def __init__(self, rules: list[QuotaRule], window: float, samples: int) -> None:
        self._buckets: dict[tuple[str, str | None, str | None], QuotaBucket] = {}
        self._made = 0
        self.generation = 0  # one more at each `configure`: what a session looked up under
        self.stats: dict[str, QuotaStats] = {}
        self.configure(rules, window, samples)

    def configure(self, rules: list[QuotaRule], window: float, samples: int) -> None:
        """Take new rules (a reload): every rate starts afresh under them, at once for
        established connections too; an entry's counts carry on under the same label."""
        self.window = window
        self.samples = samples
        self.rules = sorted(rules, key=QuotaRule.specificity, reverse=True)
        self.active = bool(self.rules)
        old = self.stats
        self.stats = {}
        for rule in self.rules:
            stats = self.stats[rule.label] = QuotaStats(rule)
            kept = old.get(rule.label)
            if kept is not None:
                stats.bytes, stats.requests = kept.bytes, kept.requests
                stats.throttle_seconds = kept.throttle_seconds
        self.generation += 1
        for bucket in self._buckets.values():
            bucket.retired = True
        self._buckets = {}

    def bucket(self, client_id: str | None, host: str | None, now: float) -> QuotaBucket | None:
        """The rates a client with this id, connected from `host`, is charged to (None:
        no entry matches it)."""
        rule = self._rule(client_id, host)
        if rule is None:
            return None
        # Shared by client id for an entry naming one; else per address, or per client id
        # for the default.
        key = (
            rule.label,
            client_id if rule.network is None else None,
            host if rule.network is not None else None,
        )
        bucket = self._buckets.get(key)
        if bucket is None:
            self._made += 1
            if self._made % _SWEEP_EVERY == 0:
                self._sweep(now)
            stats = self.stats[rule.label]
            bucket = self._buckets[key] = QuotaBucket(rule, stats, self.window, self.samples)
        return bucket

    def _rule(self, client_id: str | None, host: str | None) -> QuotaRule | None:
        address = None
        if host is not None:
            try:
                address = ipaddress.ip_address(host)
            except ValueError:
                address = None
        for rule in self.rules:
            if rule.client_id is not None and rule.client_id != client_id:
                continue
            if rule.network is not None and (address is None or address not in rule.network):
                continue
            return rule
        return None

    def _sweep(self, now: float) -> None:
        span = self.window * self.samples
        idle = [key for key, b in self._buckets.items() if now - b.last_used > span]
        for key in idle:
            del self._buckets[key]

    def throttled(self, now: float) -> list[dict[str, float | str | None]]:
        """The clients throttled now: their entry, whom the rate is kept for, until when."""
        rows = []
        for (label, client_id, host), bucket in self._buckets.items():
            if bucket.throttled_until > now:
                rows.append(
                    {
                        "quota": label,
                        "client_id": client_id,
                        "client_address": host,
                        "seconds_left": round(bucket.throttled_until - now, 3),
                    }
                )
        return rows
