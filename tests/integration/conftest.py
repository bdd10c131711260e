"""Fixtures that several modules of tests/integration share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.kafka_install import KAFKA_4_RELEASES
from tests.peers.tansu import TansuBroker


@pytest.fixture(scope="module", params=KAFKA_4_RELEASES)
def kafka_4_pair(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaCluster]:
    """Two Apache Kafka brokers (KRaft, small heaps), started once for the module that
    asks, on each Kafka 4 release the tests run (``KAFKA_4_RELEASES``): the module's
    tests run on one release after the other."""
    workdir = tmp_path_factory.mktemp("kafka")
    with KafkaCluster(nodes=2, heap="384m", version=request.param, workdir=workdir) as k:
        yield k


@pytest.fixture(scope="module")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TansuBroker]:
    """A Tansu broker (in-memory), started once for the module that asks."""
    with TansuBroker(workdir=tmp_path_factory.mktemp("tansu")) as broker:
        yield broker
