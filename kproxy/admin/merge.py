"""One scrape from many: the workers' `/metrics` merged into the one view a supervisor
serves (`runtime.workers`).

Each worker counts what its own connections did, so a counter, a histogram's buckets,
sum and count, and a gauge of things held (open connections, pending events) are summed
over the workers: the figure one process serving every connection would show. A gauge
that states a fact every worker holds alike (the configuration's fingerprint, a quota's
limit, the quorum's leader) is not a quantity: summing it would multiply it, so it is
taken once (`ACROSS_WORKERS`). Samples are told apart by name and labels;
each series appears once in the merged scrape, whichever workers reported it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from kproxy.observe import metric_specs as specs

#: How a metric's samples combine across workers where they are not summed: a fact
#: every worker states alike is taken once (max), and the cluster counts as reached
#: once every worker reached it (min). Of prometheus_client's process and platform
#: collectors, memory, CPU time and open descriptors add up; a start time is the
#: earliest, a limit and an info are one fact.
ACROSS_WORKERS: dict[str, str] = {
    specs.QUOTA_LIMIT.name: "max",
    specs.CONFIG_INFO.name: "max",
    specs.QUORUM_LEADER.name: "max",
    specs.QUORUM_EPOCH.name: "max",
    specs.BUILD_INFO.name: "max",
    specs.CLUSTER_REACHED.name: "min",
    "process_start_time_seconds": "min",
    "process_max_fds": "max",
    "python_info": "max",
}

_SeriesKey = tuple[str, tuple[tuple[str, str], ...]]


def _combine(how: str, a: float, b: float) -> float:
    if how == "max":
        return max(a, b)
    if how == "min":
        return min(a, b)
    return a + b


def _rule(family: Metric, sample_name: str) -> str:
    """The rule for one sample: its family's spec, by the family's exposed name."""
    for name in (sample_name, family.name, family.name + "_total"):
        rule = ACROSS_WORKERS.get(name)
        if rule is not None:
            return rule
    return "sum"


def merge_expositions(texts: Iterable[str]) -> list[Metric]:
    """The families of every worker's text exposition, each series combined once."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[_SeriesKey, float]] = {}
    for text in texts:
        for family in text_string_to_metric_families(text):
            merged = families.get(family.name)
            if merged is None:
                merged = families[family.name] = Metric(
                    family.name, family.documentation, family.type, family.unit
                )
                values[family.name] = {}
            series = values[family.name]
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                if key in series:
                    how = _rule(family, sample.name)
                    series[key] = _combine(how, series[key], sample.value)
                else:
                    series[key] = sample.value
    for name, merged in families.items():
        for (sample_name, labels), value in values[name].items():
            merged.add_sample(sample_name, dict(labels), value)
    return list(families.values())


class MergedScrape(Collector):
    """A collector that yields families merged beforehand (`merge_expositions`), and
    the supervisor's own."""

    def __init__(self, families: list[Metric], own: Iterable[Metric] = ()) -> None:
        self.families = families
        self.own = list(own)

    def collect(self) -> Iterator[Metric]:
        yield from self.families
        yield from self.own
