"""The Dockerfile and Kubernetes manifests in deploy/ are valid, and agree with kproxy."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kproxy.config.settings import parse_config

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((REPO / "deploy" / "kubernetes").glob("*.yaml"))


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_there_are_sidecar_and_gateway_manifests() -> None:
    assert {p.name for p in MANIFESTS} >= {"sidecar.yaml", "gateway.yaml"}


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_validates_strictly(path: Path) -> None:
    tool = shutil.which("kubernetes-validate")
    if tool is None:
        pytest.skip("kubernetes-validate is not installed (pip install -e '.[test]')")
    run = subprocess.run([tool, "--strict", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_embedded_kproxy_config_loads_and_ports_agree(path: Path) -> None:
    docs = documents(path)
    configs = [d for d in docs if d["kind"] == "ConfigMap" and "kproxy.yaml" in d["data"]]
    assert configs, "no kproxy.yaml ConfigMap"
    settings = parse_config(yaml.safe_load(configs[0]["data"]["kproxy.yaml"]))
    for dep in (d for d in docs if d["kind"] == "Deployment"):
        pod = dep["spec"]["template"]["spec"]
        for c in pod.get("initContainers", []) + pod["containers"]:
            if c["name"] != "kproxy":
                continue
            ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
            admin = "admin" if "admin" in ports else "kproxy-admin"
            assert ports[admin] == settings.admin.port
            assert settings.admin.bind_host != "127.0.0.1", "probes could not reach /readyz"
            if "bootstrap" in ports:
                assert ports["bootstrap"] == settings.listeners.bootstrap_port
                nodes = {int(n[5:]): p for n, p in ports.items() if n.startswith("node-")}
                assert nodes, "a gateway must expose its node ports"
                for node_id, port in nodes.items():
                    assert settings.listeners.port_for_node(node_id) == port
                assert settings.listeners.port_for_node(max(nodes) + 1) is None, (
                    "a node id kproxy maps has no exposed port"
                )


def test_dockerfile_lints_clean() -> None:
    tool = shutil.which("hadolint")
    if tool is None:
        pytest.skip("hadolint is not installed (pip install -e '.[test]')")
    run = subprocess.run([tool, str(REPO / "Dockerfile")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
