"""kproxy's /metrics text as a test reads it: every sample by name and labels, parsed by
prometheus-client's own parser, and a family's samples summed.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def parse_exposition(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def metrics_sum(metrics: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str) -> float:
    return sum(v for (n, _), v in metrics.items() if n == name)
