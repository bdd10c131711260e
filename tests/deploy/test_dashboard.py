"""The Grafana dashboard in deploy/ queries only metrics kproxy exports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kproxy.observe.metrics import KproxyMetrics

REPO = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((REPO / "deploy").rglob("*dashboard*.json"))

PROMQL_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
}
_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(
    r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", re.IGNORECASE
)
_GRAFANA_VARIABLE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")
_IDENTIFIER = re.compile(r"(?<![\w.])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?")


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers that are not function calls,
    keywords, label names in matchers or grouping clauses, durations or variables."""
    text = _STRING.sub('""', expr)
    text = _MATCHERS.sub("", text)
    text = _RANGE.sub("", text)
    text = _GROUPING.sub("", text)
    text = _GRAFANA_VARIABLE.sub("", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        name, call = match.group(1), match.group(2)
        if call or name.lower() in PROMQL_KEYWORDS:
            continue
        names.add(name)
    return names


def exported_series() -> set[str]:
    """Every sample name kproxy's registry can expose, as metrics.py registers it."""
    metrics = KproxyMetrics(topic_labels=True, registry=CollectorRegistry())
    names: set[str] = set()
    for family in metrics.registry.collect():
        if family.type == "counter":
            names.add(family.name + "_total")
        elif family.type == "histogram":
            names.update(family.name + s for s in ("_bucket", "_sum", "_count"))
        else:
            names.add(family.name)
        names.update(sample.name for sample in family.samples)
    return names


def exprs(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""

    def walk_panels(panels: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        for panel in panels:
            for target in panel.get("targets", []):
                if "expr" in target:
                    yield f"panel {panel.get('title')!r}", target["expr"]
            yield from walk_panels(panel.get("panels", []))

    yield from walk_panels(dashboard.get("panels", []))
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            query = var["query"]
            text = query["query"] if isinstance(query, dict) else query
            # label_values(metric, label): the metric is the first argument.
            m = re.fullmatch(r"\s*label_values\(\s*([^,]+),\s*\w+\s*\)\s*", text)
            yield f"variable {var['name']!r}", m.group(1) if m else text


def test_parser_finds_metric_names_and_nothing_else() -> None:
    expr = (
        "histogram_quantile(0.99, sum by (api, le) (rate(kproxy_request_duration_seconds_bucket"
        '{instance=~"$instance", api!="Fetch"}[$__rate_interval]))) / on (api) group_left '
        "sum without (le) (kproxy_frames_total offset 5m) > bool 0 or vector(0)"
    )
    assert metric_names(expr) == {"kproxy_request_duration_seconds_bucket", "kproxy_frames_total"}


def test_there_is_a_dashboard() -> None:
    assert DASHBOARDS, "deploy/ has no Grafana dashboard"


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.name for p in DASHBOARDS])
def test_every_query_names_only_exported_metrics(path: Path) -> None:
    dashboard = json.loads(path.read_text(encoding="utf-8"))
    exported = exported_series()
    queries = list(exprs(dashboard))
    assert len(queries) >= 10
    used: set[str] = set()
    for where, expr in queries:
        names = metric_names(expr)
        assert names, f"{where}: no metric in {expr!r}"
        unknown = names - exported
        assert not unknown, f"{where}: {sorted(unknown)} are not exported by kproxy ({expr!r})"
        used |= names
    # The dashboard covers what the observability issue asks operators to see.
    for wanted in (
        "kproxy_leader_changes_total",
        "kproxy_redirects_total",
        "kproxy_redirects_without_leader_total",
        "kproxy_endpoint_rewrites_total",
        "kproxy_endpoints_unmapped_total",
        "kproxy_request_duration_seconds_bucket",
        "kproxy_upstream_duration_seconds_bucket",
        "kproxy_connections_active",
        "kproxy_frame_errors_total",
        "kproxy_events_dropped_total",
    ):
        assert wanted in used, f"no panel shows {wanted}"


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.name for p in DASHBOARDS])
def test_dashboard_is_well_formed(path: Path) -> None:
    dashboard = json.loads(path.read_text(encoding="utf-8"))
    assert dashboard["title"] and dashboard["uid"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24
        for target in panel.get("targets", []):
            assert target["refId"]


def test_an_unknown_metric_would_be_caught() -> None:
    exported = exported_series()
    assert metric_names("rate(kproxy_redirect_total[5m])") - exported == {"kproxy_redirect_total"}
    assert "kproxy_request_duration_seconds_bucket" in exported
    assert "kproxy_leader_changes_by_topic_total" in exported


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.name for p in DASHBOARDS])
def test_every_query_is_valid_promql(path: Path, tmp_path: Path) -> None:
    """promtool parses recording rules: one rule per query, Grafana variables filled in."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    dashboard = json.loads(path.read_text(encoding="utf-8"))
    rules = []
    for i, (_where, expr) in enumerate(exprs(dashboard)):
        expr = expr.replace("$__rate_interval", "5m").replace("$instance", ".*")
        rules.append({"record": f"dashboard:query_{i}", "expr": expr})
    rules_file = tmp_path / "rules.json"  # YAML is a superset of JSON
    rules_file.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
    proc = subprocess.run(
        [promtool, "check", "rules", str(rules_file)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()
