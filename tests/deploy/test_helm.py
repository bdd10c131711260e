"""The Helm chart (deploy/helm/kproxy): every mode and values file lints and renders,
every rendered object validates offline against Kubernetes' own schemas, the kproxy.yaml
it embeds loads with kproxy's loader, and the ports it publishes are the ports that
configuration maps node ids to. Bad values fail at `helm template`, as at `helm install`.

helm comes from `.ci/install-helm.sh` (built from the Go module proxy, cached)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from kproxy.config.settings import Settings, parse_config
from tools.render_manifests import default_helm

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "kproxy"
VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
KUBERNETES = "1.32.0"  # native sidecars (1.29+) and the preStop sleep action (1.30+)
CRDS = {"ServiceMonitor", "PodMonitor", "TLSRoute"}  # not Kubernetes' own: checked here


def helm() -> str:
    found = default_helm()
    if not Path(found).exists():
        if os.environ.get("CI"):
            pytest.fail("helm is missing: .ci/install.sh builds it (bash .ci/install-helm.sh)")
        pytest.skip("helm is not installed (bash .ci/install-helm.sh)")
    return found


def run_helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([helm(), *args], capture_output=True, text=True, timeout=120)


def template(values: Path | None = None, *sets: str) -> list[dict[str, Any]]:
    args = ["template", "kproxy", str(CHART)]
    if values is not None:
        args += ["-f", str(values)]
    for s in sets:
        args += ["--set", s]
    run = run_helm(*args)
    assert run.returncode == 0, run.stderr
    return [d for d in yaml.safe_load_all(run.stdout) if d]


def template_error(values: Path, *sets: str) -> str:
    args = ["template", "kproxy", str(CHART), "-f", str(values)]
    for s in sets:
        args += ["--set-json" if s.startswith("json:") else "--set", s.removeprefix("json:")]
    run = run_helm(*args)
    assert run.returncode != 0, f"rendered with {sets}"
    return run.stderr


def kinds(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def embedded_settings(docs: list[dict[str, Any]]) -> Settings:
    (config_map,) = kinds(docs, "ConfigMap")
    return parse_config(yaml.safe_load(config_map["data"]["kproxy.yaml"]))


def pod_spec(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = kinds(docs, "Deployment")
    spec: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return spec


def kproxy_container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    spec = pod_spec(docs)
    (container,) = [
        c for c in spec.get("initContainers", []) + spec["containers"] if c["name"] == "kproxy"
    ]
    return container


def test_values_schema_is_generated_from_kproxys_configuration_schema() -> None:
    tool = REPO / "tools" / "generate_helm_schema.py"
    run = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("values", [None, *VALUES], ids=lambda v: v.name if v else "defaults")
def test_chart_lints(values: Path | None) -> None:
    args = ["lint", str(CHART), "--strict"]
    if values is not None:
        args += ["-f", str(values)]
    else:  # the defaults need only the name clients reach the gateway by
        args += ["--set", "config.listeners.advertised_host=kafka.example.com"]
        args += ["--set", "config.listeners.max_node_id=9"]
    run = run_helm(*args)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("values", VALUES, ids=lambda v: v.name)
def test_every_rendered_object_validates_strictly(values: Path) -> None:
    docs = template(values)
    assert {d["kind"] for d in docs} >= {"ConfigMap", "Deployment"}
    for doc in docs:
        if doc["kind"] in CRDS:
            assert doc["apiVersion"].split("/")[0] in (
                "monitoring.coreos.com",
                "gateway.networking.k8s.io",
            )
            continue
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)


@pytest.mark.parametrize("values", VALUES, ids=lambda v: v.name)
def test_embedded_configuration_loads_and_ports_agree(values: Path) -> None:
    docs = template(values)
    settings = embedded_settings(docs)
    lst = settings.listeners
    container = kproxy_container(docs)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    admin = "kproxy-admin" if pod_spec(docs).get("initContainers") else "admin"
    assert ports.pop(admin) == settings.admin.port
    assert settings.admin.bind_host == "0.0.0.0", "the kubelet could not probe /readyz"
    assert settings.admin.topology == "loopback", "/topology would leave the pod"
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["port"] == admin
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert str(settings.events.dir) in mounts and "/etc/kproxy" in mounts
    if not ports:  # a sidecar publishes nothing but the admin port
        return
    assert ports.pop("bootstrap") == lst.bootstrap_port
    controllers = {int(n.removeprefix("ctrl-")): ports.pop(n) for n in list(ports) if "ctrl-" in n}
    assert controllers == {n: c.port for n, c in settings.quorum.controllers.items()}
    if lst.sni is None:
        nodes = {int(name.removeprefix("node-")): port for name, port in ports.items()}
        mapped = set(range(lst.max_node_id + 1)) | set(lst.node_port_overrides)
        assert set(nodes) == mapped
        for node_id, port in nodes.items():
            assert lst.port_for_node(node_id) == port
    else:
        assert ports == {}, "SNI routing serves every node on the bootstrap port"
    (service,) = [s for s in kinds(docs, "Service") if not s["metadata"]["name"].endswith("-admin")]
    published = {p["name"]: p["port"] for p in service["spec"]["ports"]}
    served = {p["name"]: p["containerPort"] for p in container["ports"] if p["name"] != admin}
    assert published == served
    assert all(p["targetPort"] == p["name"] for p in service["spec"]["ports"])
    assert admin not in published, "the admin port must not reach the load balancer"


def test_sidecar_is_native_and_the_application_talks_to_it() -> None:
    docs = template(CHART / "ci" / "sidecar-values.yaml")
    spec = pod_spec(docs)
    (sidecar,) = spec["initContainers"]
    assert sidecar["restartPolicy"] == "Always"  # starts first, stops last (KEP-753)
    (app,) = spec["containers"]
    env = {e["name"]: e.get("value") for e in app["env"]}
    settings = embedded_settings(docs)
    assert env["KAFKA_BOOTSTRAP_SERVERS"] == f"127.0.0.1:{settings.listeners.bootstrap_port}"
    assert settings.listeners.bind_host == "127.0.0.1", "a sidecar serves its own pod only"
    security = sidecar["securityContext"]
    assert security["runAsNonRoot"] and security["readOnlyRootFilesystem"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    (monitor,) = kinds(docs, "PodMonitor")
    labels = kinds(docs, "Deployment")[0]["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == "kproxy-admin"
    grace = settings.shutdown.grace_seconds
    assert spec["terminationGracePeriodSeconds"] >= 30 + grace  # the app's, then kproxy's


def test_gateway_spreads_drains_and_is_scraped_inside_the_cluster() -> None:
    docs = template(CHART / "ci" / "gateway-values.yaml")
    settings = embedded_settings(docs)
    spec = pod_spec(docs)
    container = kproxy_container(docs)
    pause = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert spec["terminationGracePeriodSeconds"] > pause + settings.shutdown.grace_seconds
    keys = {c["topologyKey"] for c in spec["topologySpreadConstraints"]}
    assert keys == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    (pdb,) = kinds(docs, "PodDisruptionBudget")
    pod_labels = kinds(docs, "Deployment")[0]["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert kinds(docs, "Deployment")[0]["spec"]["replicas"] > pdb["spec"]["maxUnavailable"]
    (monitor,) = kinds(docs, "ServiceMonitor")
    (admin_service,) = [s for s in kinds(docs, "Service") if s["spec"]["type"] == "ClusterIP"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= (
        admin_service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == admin_service["spec"]["ports"][0]["name"]
    (public,) = [s for s in kinds(docs, "Service") if s["spec"]["type"] == "LoadBalancer"]
    assert public["spec"]["externalTrafficPolicy"] == "Local"  # client IPs for per-IP limits
    assert settings.listeners.denied_apis(), "the example gateway refuses administration"


def test_sni_gateway_routes_every_name_through_one_port() -> None:
    docs = template(CHART / "ci" / "sni-gateway-values.yaml")
    sni = embedded_settings(docs).listeners.sni
    assert sni is not None
    (route,) = kinds(docs, "TLSRoute")
    assert route["spec"]["hostnames"] == [sni.bootstrap_host, "*.kafka.example.com"]
    assert sni.node_host(7).endswith(route["spec"]["hostnames"][1].removeprefix("*"))


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["config.listeners.bootstrap_port=x9092"], "bootstrap_port"),
        (["config.cluster.bootstrap_server=a:9092"], "bootstrap_server"),
        (['json:config.listeners.api_policy={"deny":["CreateTopic"]}'], "CreateTopic"),
        (["config.admin.topology=sometimes"], "topology"),
        (["mode=proxy"], "mode"),
        (["config.listeners.max_node_id=200"], "gateway.maxServicePorts"),
        (["config.listeners.broker_port_base=0"], "broker_port_base must not be 0"),
        (["gateway.tlsRoute.enabled=true"], "needs config.listeners.sni"),
    ],
)
def test_bad_values_fail_at_render(sets: list[str], message: str) -> None:
    assert message in template_error(CHART / "ci" / "gateway-values.yaml", *sets)


def test_a_gateway_needs_the_name_clients_reach_it_by_and_a_sidecar_its_image() -> None:
    error = template_error(CHART / "values.yaml")
    assert "set config.listeners.advertised_host" in error
    error = template_error(CHART / "values.yaml", "mode=sidecar")
    assert "set sidecar.app.image" in error


@pytest.mark.parametrize("name", ["gateway", "sidecar"])
def test_plain_manifests_are_the_chart_rendered(name: str) -> None:
    """deploy/kubernetes/ holds the chart's output for those who deploy without Helm."""
    rendered = template(CHART / "ci" / f"{name}-values.yaml")
    manifest = REPO / "deploy" / "kubernetes" / f"{name}.yaml"
    committed = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
    assert committed == rendered, "run python tools/render_manifests.py"
