#!/usr/bin/env python3
"""Write the Helm chart's values.schema.json from kproxy's configuration schema.

The chart's `config` value is kproxy's configuration file, so its schema is kproxy's
own (`kproxy config-schema`, from the pydantic settings): a value kproxy would refuse at
start fails `helm install`/`helm template` instead. The chart's other values are
described here. A test checks the committed file equals what this writes.

Usage: python tools/generate_helm_schema.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kproxy.config.settings import config_json_schema

CHART = Path(__file__).resolve().parents[1] / "deploy" / "helm" / "kproxy"
SCHEMA_PATH = CHART / "values.schema.json"


def _object(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": properties, **extra}


_STRING = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_MAP = {"type": "object"}
_LIST = {"type": "array"}
_RESOURCES = _object(
    {"requests": _MAP, "limits": _MAP, "claims": _LIST},
)

# The chart's own values (values.yaml says what each is for).
CHART_VALUES: dict[str, Any] = {
    "mode": {"enum": ["gateway", "sidecar"]},
    "image": _object(
        {
            "repository": {"type": "string", "minLength": 1},
            "tag": _STRING,
            "pullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
        }
    ),
    "imagePullSecrets": _LIST,
    "resources": _object({"gateway": _RESOURCES, "sidecar": _RESOURCES}),
    "eventsVolume": _object({"sizeLimit": _STRING}),
    "secretMounts": {
        "type": "array",
        "items": _object(
            {"name": _STRING, "secretName": _STRING, "mountPath": _STRING},
            required=["name", "secretName", "mountPath"],
        ),
    },
    "podAnnotations": _MAP,
    "podLabels": _MAP,
    "nodeSelector": _MAP,
    "tolerations": _LIST,
    "affinity": _MAP,
    "gateway": _object(
        {
            "replicas": _INT,
            "service": _object(
                {
                    "type": {"enum": ["LoadBalancer", "NodePort", "ClusterIP"]},
                    "annotations": _MAP,
                    "externalTrafficPolicy": {"enum": ["Local", "Cluster"]},
                    "loadBalancerSourceRanges": {"type": "array", "items": _STRING},
                }
            ),
            "maxServicePorts": {"type": "integer", "minimum": 1},
            "podDisruptionBudget": _object({"maxUnavailable": {"type": ["integer", "string"]}}),
            "topologySpread": _object(
                {
                    "maxSkew": {"type": "integer", "minimum": 1},
                    "topologyKey": _STRING,
                    "whenUnsatisfiable": {"enum": ["DoNotSchedule", "ScheduleAnyway"]},
                }
            ),
            "tlsRoute": _object({"enabled": {"type": "boolean"}, "parentRefs": _LIST}),
            "preStopSleepSeconds": _INT,
        }
    ),
    "sidecar": _object(
        {
            "app": _object(
                {
                    "name": {"type": "string", "minLength": 1},
                    "image": _STRING,
                    "replicas": _INT,
                    "args": _LIST,
                    "env": _LIST,
                    "ports": _LIST,
                    "resources": _MAP,
                    "terminationGracePeriodSeconds": _INT,
                }
            ),
            "bootstrapEnv": {"type": "string", "minLength": 1},
        }
    ),
    "monitoring": _object({"enabled": {"type": "boolean"}, "interval": _STRING, "labels": _MAP}),
}


def values_schema() -> dict[str, Any]:
    config = config_json_schema()
    definitions = config.pop("$defs")
    config.pop("title", None)
    config["description"] = "kproxy.yaml: kproxy's configuration (docs/config.schema.json)"
    # The chart reads these to place the admin port and the event log's volume.
    config["required"] = sorted({*config.get("required", []), "admin", "events"})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "kproxy Helm chart values",
        **_object({**CHART_VALUES, "config": config}, required=["mode", "config"]),
        "$defs": definitions,
    }


def render() -> str:
    return json.dumps(values_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if SCHEMA_PATH.read_text() != text:
            print(f"{SCHEMA_PATH} is stale: run tools/generate_helm_schema.py", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.write_text(text)
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
