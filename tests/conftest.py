"""Fixtures that test modules in more than one directory share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.hand_log import Hand


@pytest.fixture(scope="session")
def hand(tmp_path_factory: pytest.TempPathFactory) -> Hand:
    """`kproxy analyze` of the hand-written log (tests/hand_log.py) on real
    local Spark, run once: the unit tests check its figures, the browser test
    (tests/integration/test_report_browser.py) renders its report."""
    pytest.importorskip("pyspark")
    pytest.importorskip("matplotlib")
    from tests.hand_log import analyze_hand_log

    return analyze_hand_log(tmp_path_factory.mktemp("hand"))


@pytest.fixture(scope="module")
def spark(hand: Hand) -> Iterator[SparkSession]:
    """A local Spark session of the module's own, built after `hand` (whose session is
    stopped by then: one SparkContext runs in a JVM at a time)."""
    from kproxy.analytics.session import build_session

    session = build_session("local[2]")
    yield session
    session.stop()
