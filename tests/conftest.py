"""Fixtures that test modules in more than one directory share."""

from __future__ import annotations

import gc
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.hand_log import Hand


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, Any, Any]:
    """Around a test with real clients (`peers`), its fixtures' setup and teardown
    included, the cyclic garbage collector runs only here, on the main thread.
    confluent-kafka's AdminClient lives in a reference cycle (confluent-kafka-python
    #975), so only the collector frees it; started by a librdkafka thread calling back
    into Python (another client's admin future resolved), a collection destroys the
    client from a thread of its own, and the interpreter aborts or crashes (#1761,
    #2129: their own tests turn the collector off around such calls)."""
    del nextitem
    if item.get_closest_marker("peers") is None:
        return (yield)
    gc.disable()
    try:
        return (yield)
    finally:
        gc.collect()
        gc.enable()


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
