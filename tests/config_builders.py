"""What the kproxy.config tests build their cases from: the least valid configuration,
one with sections merged in, and the error a configuration or a file gets."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from kproxy.config.settings import (
    ConfigError,
    load_config,
    parse_config,
)

REPO = Path(__file__).resolve().parents[1]
CONFIG_FILES = sorted((REPO / "config").glob("*.yaml")) + sorted((REPO / "config").glob("*.yml"))

MINIMAL: dict[str, Any] = {"cluster": {"bootstrap_servers": ["broker-1.kafka:9092"]}}


def cfg(**sections: Any) -> dict[str, Any]:
    """MINIMAL with the given sections merged in (cluster keys are merged, not replaced)."""
    data = copy.deepcopy(MINIMAL)
    for name, value in sections.items():
        if name == "cluster" and isinstance(value, dict):
            data["cluster"].update(value)
        else:
            data[name] = value
    return data


def error_of(data: Any) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return str(info.value)


def load_error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)
