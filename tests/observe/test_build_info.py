"""Which build a kproxy process runs (kproxy/observe/build_info.py): its hot path compiled or pure
Python, its event loop, as `kproxy_build_info` reports them.

A compiled build's own process is checked where one is built:
tests/project/test_compiled_build.py (`kproxy version` there) and
tests/integration/test_tansu_datapath.py (a `kproxy run` of each build)."""

from __future__ import annotations

import asyncio

import pytest
import uvloop
from prometheus_client import CollectorRegistry

from kproxy.observe.build_info import (
    COMPILED,
    MIXED,
    NO_LOOP,
    PYTHON,
    event_loop_kind,
    hot_path_build,
)
from kproxy.observe.metrics import KproxyMetrics

# Real modules of each kind: uvloop's loop is an extension module, json's decoder Python.
EXTENSION_MODULE = "uvloop.loop"
PYTHON_MODULE = "json.decoder"


def test_a_build_is_named_by_how_its_modules_were_loaded() -> None:
    assert hot_path_build((EXTENSION_MODULE,)) == COMPILED
    assert hot_path_build((PYTHON_MODULE,)) == PYTHON
    assert hot_path_build((PYTHON_MODULE, EXTENSION_MODULE)) == MIXED


@pytest.mark.pure_python
def test_this_tree_runs_pure_python() -> None:
    # The suite's own pass runs the sources; test_compiled_build.py runs a build.
    assert hot_path_build() == PYTHON


def build_labels() -> dict[str, str]:
    metrics = KproxyMetrics(registry=CollectorRegistry(), runtime_collectors=False)
    (sample,) = [
        s for f in metrics.registry.collect() if f.name == "kproxy_build_info" for s in f.samples
    ]
    assert sample.value == 1
    return sample.labels


async def labels_on_the_loop() -> dict[str, str]:
    return build_labels()


def test_build_info_names_the_hot_path_and_the_running_loop() -> None:
    assert asyncio.run(labels_on_the_loop())["event_loop"] == "asyncio"
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        labels = runner.run(labels_on_the_loop())
    assert labels["event_loop"] == "uvloop"
    assert labels["hot_path"] == hot_path_build()
    assert build_labels()["event_loop"] == event_loop_kind() == NO_LOOP
