"""The quorum story a failed KRaft quorum fixture prints (tests/peers/kraft_quorum.py):
the events that say how a node found the quorum, repeats folded, noise left out."""

from __future__ import annotations

from pathlib import Path

from tests.peers.kraft_quorum import quorum_story

CONFIG_NOTICE = "[main] WARN kafka.server.KafkaConfig - default.replication.factor is ..."
UNATTACHED = (
    "[kafka-12-raft-io-thread] INFO org.apache.kafka.raft.QuorumState - [RaftManager id=12] "
    "Completed transition to UnattachedState(epoch=0)"
)
STARTING = (
    "[main] INFO org.apache.kafka.raft.KafkaRaftClient - [RaftManager id=12] "
    "Starting voters are VoterSet(voters={})"
)
UNREGISTERED = (
    "[hb] INFO org.apache.kafka.server.BrokerLifecycleManager - [BrokerLifecycleManager id=12] "
    "Unable to register the broker because the RPC got timed out before it could be sent."
)
LOG = "".join(
    f"{time} {line}\n"
    for time, line in [
        ("12:51:14.100", CONFIG_NOTICE),
        ("12:51:14.200", STARTING),
        ("12:51:15.000", UNATTACHED),
        ("12:51:16.000", UNREGISTERED),
        ("12:51:20.000", UNREGISTERED),
        ("12:51:24.000", UNREGISTERED),
    ]
)


def test_repeats_fold_into_one_line_with_their_count(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(LOG)
    story = quorum_story(log).splitlines()
    assert story == [
        "12:51:15.000 [kafka-12-raft-io-thread] INFO QuorumState - "
        "Completed transition to UnattachedState(epoch=0)",
        "12:51:16.000 [hb] INFO BrokerLifecycleManager - [BrokerLifecycleManager id=12] "
        "Unable to register the broker because the RPC got timed out before it could be "
        "sent.  [x3]",
    ]


def test_only_the_last_events_are_told_each_cut_to_its_width(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "".join(
            f"12:00:0{i}.000 [t] ERROR org.apache.kafka.X - failure {i} " + "x" * 300 + "\n"
            for i in range(6)
        )
    )
    story = quorum_story(log, limit=2, width=40).splitlines()
    assert story == [
        "12:00:04.000 [t] ERROR X - failure 4 xxx",
        "12:00:05.000 [t] ERROR X - failure 5 xxx",
    ]


def test_a_missing_log_or_a_quiet_one_says_so(tmp_path: Path) -> None:
    assert quorum_story(tmp_path / "absent.log") == "(no log)"
    quiet = tmp_path / "quiet.log"
    quiet.write_text("12:00:00.000 [main] INFO kafka.Kafka - started\n")
    assert quorum_story(quiet) == "(no quorum event logged)"
