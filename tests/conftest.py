"""Fixtures that test modules in more than one directory share."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.unit.test_analytics_spark import Hand


@pytest.fixture(scope="session")
def hand(tmp_path_factory: pytest.TempPathFactory) -> Hand:
    """`kproxy analyze` of the hand-written log (tests/unit/test_analytics_spark.py) on
    real local Spark, run once: the unit tests check its figures, the browser test
    (tests/integration/test_report_browser.py) renders its report."""
    pytest.importorskip("pyspark")
    pytest.importorskip("matplotlib")
    from tests.unit.test_analytics_spark import analyze_hand_log

    return analyze_hand_log(tmp_path_factory.mktemp("hand"))
