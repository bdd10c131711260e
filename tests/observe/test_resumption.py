"""After a switchover: each client's first successful Produce and Fetch on the target,
timed from the fence (`kproxy.observe.resumption`), and the per-session watch that has
their responses walked meanwhile and then gets out of the way."""

from __future__ import annotations

from pathlib import Path

from kproxy.config.settings import ClusterSettings, EventSettings, Settings
from kproxy.observe.observability import Observability
from kproxy.observe.resumption import Resumption
from kproxy.protocol.walker import LeaderObservation
from kproxy.session import ProxySession, SessionLimits
from tests.event_files import read_lines
from tests.session.frames import address_map

PRODUCE, FETCH, METADATA = 0, 1, 3


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def ok(partition: int = 0) -> LeaderObservation:
    return LeaderObservation("orders", None, partition, 0, None, None, False)


def failed(partition: int = 0, error: int = 3) -> LeaderObservation:
    return LeaderObservation("orders", None, partition, error, None, None, False)


def test_a_client_is_timed_from_the_fence_to_its_first_success_each_way() -> None:
    clock = Clock()
    r = Resumption(window_seconds=60.0, monotonic=clock)
    r.fenced("admin", "a", "b")
    clock.now += 0.5
    # Old connections' answers while fenced are the old cluster's: not a resumption.
    assert r.observe(PRODUCE, "app", [ok()]) is None
    r.lift()
    clock.now += 1.0
    assert r.observe(PRODUCE, "app", [failed()]) is None  # an error is no success
    assert r.observe(METADATA, "app", [ok()]) is None  # not a data API
    clock.now += 1.0
    assert r.observe(PRODUCE, "app", [failed(0), ok(1)]) == 2.5
    assert r.observe(PRODUCE, "app", [ok()]) is None  # its first only
    assert r.awaits("app")  # its Fetch is still awaited
    clock.now += 0.5
    assert r.observe(FETCH, "app", [ok()]) == 3.0
    assert not r.awaits("app") and r.awaits("other")
    clock.now += 60.0
    assert not r.awaits("other")
    assert r.observe(FETCH, "other", [ok()]) is None  # after the window


def test_a_new_switchover_forgets_the_last_ones_clients() -> None:
    clock = Clock()
    r = Resumption(monotonic=clock)
    r.fenced("admin", "a", "b")
    r.lift()
    assert r.observe(FETCH, "app", [ok()]) == 0.0
    r.fenced("reload", "b", "a")
    assert (r.sequence, r.trigger, r.source, r.target) == (2, "reload", "b", "a")
    r.lift()
    clock.now += 2.0
    assert r.observe(FETCH, "app", [ok()]) == 2.0


def test_clients_remembered_are_capped() -> None:
    r = Resumption(max_clients=2, monotonic=Clock())
    r.fenced("admin", "a", "b")
    r.lift()
    assert [r.observe(FETCH, f"c{i}", [ok()]) for i in range(3)] == [0.0, 0.0, None]
    assert r.over_cap == 1


def test_the_watch_names_unresumed_clients_then_gives_the_shared_view_back() -> None:
    clock = Clock()
    r = Resumption(window_seconds=60.0, monotonic=clock)
    shared = {"redirected": 1}
    session = ProxySession(address_map(), SessionLimits(1 << 20, 100), awaiting_success=shared)
    assert r.watch(shared, session) is None  # no switchover: the shared view
    r.fenced("admin", "a", "b")
    watch = r.watch(shared, session)
    assert watch is not None
    session.awaiting_success = watch
    r.lift()
    assert "app" in watch and "redirected" in watch
    r.observe(PRODUCE, "app", [ok()])
    r.observe(FETCH, "app", [ok()])
    assert "redirected" in watch and session.awaiting_success is watch
    assert "app" not in watch  # resumed both ways: the session gets the shared view back
    assert session.awaiting_success is shared
    clock.now += 61.0
    assert r.watch(shared, session) is None  # the window is over: new sessions as always


def test_the_observer_reports_each_first_success_as_an_event_and_a_metric(
    tmp_path: Path,
) -> None:
    settings = Settings(
        cluster=ClusterSettings(bootstrap_servers=(("127.0.0.1", 9092),)),
        events=EventSettings(dir=tmp_path),
    )
    o = Observability(settings, instance="p-1", runtime_collectors=False)
    o.leaders(PRODUCE, "app", 1, [ok()], frozenset())  # before any switchover: nothing
    o.switchover("fenced", "admin", "a", "b", {"connections": 2})
    summary = {"fence_seconds": 0.1, "seconds": 0.2, "drained": 2, "cut": 0, "unanswered": 0,
               "transactions_aborted": 0, "transactions_not_aborted": 0}  # fmt: skip
    o.switchover("completed", "admin", "a", "b", summary)
    o.leaders(PRODUCE, "app", 1, [failed()], frozenset())
    o.leaders(PRODUCE, "app", 1, [ok()], frozenset())
    o.leaders(PRODUCE, "app", 1, [ok()], frozenset())
    o.leaders(FETCH, None, 2, [ok()], frozenset())
    o.close()
    resumed = [line for line in read_lines(tmp_path) if line.get("phase") == "resumed"]
    assert [(x["client_id"], x["api"], x["from_cluster"], x["to_cluster"]) for x in resumed] == [
        ("app", "Produce", "a", "b"),
        (None, "Fetch", "a", "b"),
    ]
    assert all(x["ms"] >= 0 and x["trigger"] == "admin" for x in resumed)
    m = o.metrics
    assert m.value("kproxy_switchover_resume_seconds_count", {"api": "Produce"}) == 1
    assert m.value("kproxy_switchover_resume_seconds_count", {"api": "Fetch"}) == 1
