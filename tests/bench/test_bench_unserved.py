"""A path that carries no client to an upstream (the Tansu proxy 0.6.0 in front of
Apache Kafka 4.3) is reported unavailable there, with the reason, before anything is
started, instead of every run through it waiting out its timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.kafka_upstream import KafkaUpstream
from bench.peers import Unavailable
from bench.tansu_upstream import TansuUpstream


def test_the_tansu_proxy_is_unavailable_in_front_of_apache_kafka(tmp_path: Path) -> None:
    upstream = KafkaUpstream(tmp_path)
    with pytest.raises(Unavailable, match="maximum tagged fields exceeded"):
        upstream.start_proxy("tansu-proxy")
    assert not (tmp_path / "tansu-proxy").exists()  # nothing was started


def test_the_tansu_proxy_still_fronts_tansu() -> None:
    assert "tansu-proxy" not in TansuUpstream.unserved
    assert set(KafkaUpstream.unserved) == {"tansu-proxy"}
