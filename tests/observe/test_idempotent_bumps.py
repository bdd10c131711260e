"""The real-cluster test's account of messages written twice (tests/idempotent_bumps.py),
on the eos lines a librdkafka 2.16 producer logged through kproxy while a broker was
stopped: only what its own epoch bump re-sent is let through."""

from __future__ import annotations

from tests.idempotent_bumps import resent_from, unexplained_twice

TOPIC = "kproxy-real"
T = "[rdkafka#producer-5] [thrd:127.0.0.1:33305/3]: "
LOGGED = [
    f"NEWPID {T}kproxy-real [0] changed PID{{Invalid}} -> PID{{Id:0,Epoch:0}} with base MsgId 1",
    f"RESETSEQ {T}kproxy-real [0] resetting epoch base seq from 0 to 1",
    f"ERRSEQ {T}127.0.0.1:33305/3: ProduceRequest for kproxy-real [4] with 30 message(s) "
    "failed due to skipped sequence numbers (PID{Id:0,Epoch:0}, base seq 896 > next seq 886) "
    "caused by previous failed request (NOT_LEADER_FOR_PARTITION, actions "
    "Refresh,MsgNotPersisted, base seq 886..895, base msgid 887, 57ms ago): "
    "recovering and retrying",
    f"DRAIN {T}All partitions drained, bumped epoch to PID{{Id:0,Epoch:1}}",
    f"NEWPID {T}kproxy-real [4] changed PID{{Id:0,Epoch:0}} -> PID{{Id:0,Epoch:1}} "
    "with base MsgId 887",
    f"RESETSEQ {T}kproxy-real [4] resetting epoch base seq from 1 to 887",
    f"RESETSEQ {T}kproxy-real [0] resetting epoch base seq from 1 to 596",
]


def partition_zero(twice: int) -> dict[int, list[tuple[int, int]]]:
    """Messages 0-999 on partition 0 (ids 1-1000), message ``twice`` at two offsets."""
    written = {n: [(0, n)] for n in range(1000)}
    written[twice] = [(0, twice), (0, 2000)]
    return written


def test_only_the_bumps_resets_are_read() -> None:
    assert resent_from(LOGGED, TOPIC) == {4: [887], 0: [596]}
    assert resent_from(LOGGED, "other") == {}


def test_a_message_the_bump_resent_is_let_through() -> None:
    assert unexplained_twice(partition_zero(700), LOGGED, TOPIC) == {}  # id 701 >= 596


def test_a_message_acknowledged_before_the_bump_is_not() -> None:
    assert unexplained_twice(partition_zero(100), LOGGED, TOPIC) == {100: [(0, 100), (0, 2000)]}


def test_without_a_bump_every_message_written_twice_is_reported() -> None:
    before_the_bump = LOGGED[:3]
    assert unexplained_twice(partition_zero(700), before_the_bump, TOPIC) == {
        700: [(0, 700), (0, 2000)]
    }


def test_a_partition_the_bump_did_not_reset_is_not_excused() -> None:
    written = {n: [(1, n)] for n in range(1000)}
    written[700] = [(1, 700), (1, 2000)]
    assert unexplained_twice(written, LOGGED, TOPIC) == {700: [(1, 700), (1, 2000)]}


def test_a_message_further_on_than_the_requests_in_flight_is_not() -> None:
    written = {n: [(0, n)] for n in range(60_000)}
    written[59_000] = [(0, 59_000), (0, 70_000)]  # id 59,001: 596 + 50,000 is further back
    assert unexplained_twice(written, LOGGED, TOPIC) == {59_000: [(0, 59_000), (0, 70_000)]}
