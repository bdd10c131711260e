"""`runtime.workers`: a count or auto, and only with ports every worker can share."""

from __future__ import annotations

import os

import pytest

from kproxy.config.settings import parse_config
from tests.config_builders import cfg, error_of

FIXED = {"bootstrap_port": 9092, "broker_port_base": 9100}


def test_one_worker_by_default_and_auto_is_one_per_usable_cpu() -> None:
    assert parse_config(cfg()).runtime.worker_count() == 1
    auto = parse_config(cfg(listeners=FIXED, runtime={"workers": "auto"}))
    assert auto.runtime.worker_count() == len(os.sched_getaffinity(0))
    assert parse_config(cfg(listeners=FIXED, runtime={"workers": 3})).runtime.worker_count() == 3


@pytest.mark.parametrize(
    ("listeners", "workers", "error"),
    [
        (
            {"bootstrap_port": 0, "broker_port_base": 9100},
            2,
            "listeners.bootstrap_port: must be set (not 0) with runtime.workers",
        ),
        (
            {"bootstrap_port": 9092, "broker_port_base": 0},
            "auto",
            "listeners.broker_port_base: must be set (not 0) with runtime.workers, or nodes "
            "served by SNI",
        ),
    ],
)
def test_several_workers_need_ports_the_os_does_not_choose(
    listeners: dict[str, int], workers: int | str, error: str
) -> None:
    assert error_of(cfg(listeners=listeners, runtime={"workers": workers})) == error


@pytest.mark.parametrize("workers", [0, -1, 257, "many", 2.0, True])
def test_a_worker_count_is_a_whole_number_from_1_to_256_or_auto(workers: object) -> None:
    assert error_of(cfg(listeners=FIXED, runtime={"workers": workers})).startswith(
        "runtime.workers:"
    )
