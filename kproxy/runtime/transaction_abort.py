"""A switchover's abort of the transactions its clients left open on the cluster it leaves.

A transactional producer fenced in the middle of a transaction finishes it on the target,
where it fails (the target never gave it its producer id) and is aborted by the client.
On the old cluster it would stay open until `transaction.timeout.ms`, and read-committed
consumers there (MirrorMaker 2's, replicating to the target) would read nothing past
it meanwhile. So kproxy ends it at the fence: for each transactional id the fenced
connections used (`kproxy.session.transactions`), it asks the old cluster's transaction
coordinator for a producer id, as a new instance of that producer would (InitProducerId
without one, KIP-98): the coordinator aborts the open transaction and fences the old
instance. A transaction whose commit the coordinator had received is completed first
(CONCURRENT_TRANSACTIONS until then): never half-moved either way.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kproxy.runtime.mapping import cluster_target
from kproxy.runtime.own_connection import (
    UNANSWERED,
    Exchange,
    ask_bootstrap,
    own_exchange,
    why_unanswered,
)

if TYPE_CHECKING:
    from kproxy.config.cluster import ClusterSettings

FIND_COORDINATOR, INIT_PRODUCER_ID = 10, 22
# Versions every broker from Kafka 3.0 to 4.x serves (FindCoordinator v4: batched, KIP-699).
FIND_COORDINATOR_VERSION, INIT_PRODUCER_ID_VERSION = 4, 4
TRANSACTION_KEY_TYPE = 1
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, CONCURRENT_TRANSACTIONS (the
# coordinator is still writing the abort's or a commit's markers): asked again.
RETRIABLE = frozenset((14, 15, 51))
RETRY_SECONDS = 0.05
# The transaction timeout recorded with the id: kproxy's producer id never opens one.
TIMEOUT_MS = 60_000
ABORTED = "aborted"


async def abort_transactions(
    cluster: ClusterSettings,
    tls: ssl.SSLContext | None,
    ids: Iterable[str],
    max_frame_bytes: int,
    seconds: float,
) -> dict[str, str]:
    """Each id's outcome: `ABORTED` (nothing of the old producer's is open any more),
    else why not; within `seconds` in all."""
    outcome = dict.fromkeys(sorted(ids), "not answered in time")
    if outcome:
        try:
            await asyncio.wait_for(_abort(cluster, tls, outcome, max_frame_bytes), seconds)
        except TimeoutError:
            pass
        except UNANSWERED as exc:
            why = why_unanswered(exc)
            for key, result in outcome.items():
                if result != ABORTED:
                    outcome[key] = why
    return outcome


async def _abort(
    cluster: ClusterSettings, tls: ssl.SSLContext | None, outcome: dict[str, str], max_frame: int
) -> None:
    by_coordinator: dict[tuple[str, int], list[str]] = {}
    answer = await ask_bootstrap(
        cluster, tls, max_frame, FIND_COORDINATOR, FIND_COORDINATOR_VERSION,
        {"KeyType": TRANSACTION_KEY_TYPE, "CoordinatorKeys": list(outcome)},
    )  # fmt: skip
    for found in answer["Coordinators"]:
        key = found["Key"]
        if key not in outcome:
            continue
        if found["ErrorCode"]:
            outcome[key] = f"no coordinator: error {found['ErrorCode']}"
        else:
            by_coordinator.setdefault((found["Host"], found["Port"]), []).append(key)
    for (host, port), keys in by_coordinator.items():
        async with own_exchange(
            cluster_target(cluster, host, port), max_frame, tls, cluster.sasl
        ) as ex:
            for key in keys:
                outcome[key] = await _fence(ex, key)


async def _fence(exchange: Exchange, key: str) -> str:
    """InitProducerId for `key` until the coordinator gives a producer id."""
    while True:
        answer = await exchange.ask_value(
            INIT_PRODUCER_ID,
            INIT_PRODUCER_ID_VERSION,
            {"TransactionalId": key, "TransactionTimeoutMs": TIMEOUT_MS},
        )
        code = answer["ErrorCode"]
        if code == 0:
            return ABORTED
        if code not in RETRIABLE:
            return f"error {code}"
        await asyncio.sleep(RETRY_SECONDS)
