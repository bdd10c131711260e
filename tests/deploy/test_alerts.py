"""deploy/prometheus/kproxy-alerts.yaml: promtool accepts the rules and their unit tests
pass, and every series and label they read is one kproxy exports."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kproxy.observe.metric_specs import METRICS, series_names
from kproxy.observe.supervisor_specs import SUPERVISOR_METRICS

RULES_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = RULES_DIR / "kproxy-alerts.yaml"
# Labels Prometheus adds to every scraped series.
TARGET_LABELS = {"job", "instance"}


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    if tool is None:
        pytest.skip("promtool is not installed (bash .ci/install.sh installs prometheus)")
    return subprocess.run([tool, *args], capture_output=True, text=True, cwd=RULES_DIR)


def rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_promtool_checks_the_rules() -> None:
    run = promtool("check", "rules", RULES.name)
    assert run.returncode == 0, run.stdout + run.stderr


def test_promtool_unit_tests_pass() -> None:
    run = promtool("test", "rules", "kproxy-alerts.test.yaml")
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_alert_is_unit_tested() -> None:
    tests = yaml.safe_load((RULES_DIR / "kproxy-alerts.test.yaml").read_text())["tests"]
    tested = {case["alertname"] for t in tests for case in t["alert_rule_test"]}
    assert tested == {rule["alert"] for rule in rules()}


def test_rules_read_only_what_kproxy_exports() -> None:
    labels = {
        name: set(spec.labels)
        for spec in METRICS + SUPERVISOR_METRICS
        for name in series_names(spec)
    }
    for rule in rules():
        names = set(re.findall(r"\b(kproxy_[a-z_]+)", rule["expr"]))
        assert names, rule["alert"]
        for name in names:
            assert name in labels, f"{rule['alert']}: kproxy exports no {name}"
        used = set(re.findall(r"by \(([^)]*)\)", rule["expr"]))
        used |= set(re.findall(r"[{,]\s*([a-z_]+)\s*[=!]~?", rule["expr"]))
        for group in used:
            for label in (part.strip() for part in group.split(",")):
                known = TARGET_LABELS.union(*(labels[n] for n in names))
                assert label in known, f"{rule['alert']}: no label {label!r} on {names}"


def test_every_runbook_link_has_its_section() -> None:
    """`runbook: docs/operations.md#anchor` names a heading of the runbook (GitHub's
    anchors: lower case, spaces to hyphens)."""
    text = (RULES_DIR.parents[1] / "docs" / "operations.md").read_text()
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in text.splitlines()
        if line.startswith("#")
    }
    for rule in rules():
        page, _, anchor = rule["annotations"]["runbook"].partition("#")
        assert page == "docs/operations.md" and anchor in anchors, rule["alert"]
