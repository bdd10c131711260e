"""Which messages an idempotent librdkafka producer wrote twice of its own accord.

librdkafka bumps an idempotent producer's epoch when a partition's requests come back
out of sequence after an error (a leader moving, a broker stopped), and sends every
message not yet acknowledged again under the new epoch. A message that was in flight
on another partition and had been written before its connection dropped is then
written a second time: the broker cannot match sequences across epochs
(confluentinc/librdkafka#4953, open; its maintainers: the idempotent producer's
exactly-once is partial, only transactions make it whole). A proxy cannot cause that,
and cannot prevent it. What stays a failure: a message written twice with no epoch bump
before it, or one acknowledged before the bump (its id below where the bump re-sent
from), or one further past that point than the requests in flight could hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: max.in.flight.requests.per.connection (5, the most idempotence allows) requests of
#: batch.num.messages (10,000, librdkafka's default) each.
MOST_MESSAGES_IN_FLIGHT = 5 * 10_000


def resent_from(lines: Iterable[str], topic: str) -> dict[int, list[int]]:
    """Per partition, the message id (librdkafka's per-partition count, from 1) from which
    each epoch bump sent the partition's messages again, from the producer's `eos` debug
    log: "... All partitions drained, bumped epoch to PID{...}" then, per partition,
    "TOPIC [P] resetting epoch base seq from S to ID"."""
    reset = re.compile(rf"{re.escape(topic)} \[(\d+)\] resetting epoch base seq from \d+ to (\d+)")
    out: dict[int, list[int]] = {}
    bumped = False
    for line in lines:
        if "bumped epoch" in line:
            bumped = True
        elif bumped and (m := reset.search(line)):
            out.setdefault(int(m[1]), []).append(int(m[2]))
    return out


def unexplained_twice(
    written: dict[int, list[tuple[int, int]]], lines: Iterable[str], topic: str
) -> dict[int, list[tuple[int, int]]]:
    """The messages of ``written`` (message number -> [(partition, offset), ...], every
    message the producer sent, numbered in the order it sent them) written more than once
    that no epoch bump in ``lines`` explains."""
    resent = resent_from(lines, topic)
    by_partition: dict[int, list[int]] = {}
    for number, where in written.items():
        by_partition.setdefault(where[0][0], []).append(number)
    ids = {p: {n: i for i, n in enumerate(sorted(ns), 1)} for p, ns in by_partition.items()}
    out = {}
    for number, where in written.items():
        if len(where) < 2:
            continue
        partition = where[0][0]
        msgid = ids[partition][number]
        if not any(
            start <= msgid < start + MOST_MESSAGES_IN_FLIGHT for start in resent.get(partition, [])
        ):
            out[number] = where
    return out
