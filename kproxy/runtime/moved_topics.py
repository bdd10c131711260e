"""The topic ids a switchover moves its clients between (`kproxy.session.topic_ids`):
each cluster's ids by topic name, from kproxy's own Metadata request, paired by name."""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TYPE_CHECKING, Final

from kproxy.runtime.own_connection import UNANSWERED, ask_bootstrap, why_unanswered

if TYPE_CHECKING:
    from kproxy.config.settings import ClusterSettings

log = logging.getLogger("kproxy.switchover")

METADATA: Final = 3
METADATA_WITH_IDS: Final = 12  # answers name each topic's id (KIP-516); null topics: all
NO_ID: Final = bytes(16)
# Clients learn the target's ids at their next metadata refresh: Kafka's clients refresh
# every `metadata.max.age.ms` (5 minutes by default), so the old ids are translated for
# twice that long after a switchover.
MOVED_IDS_SECONDS: Final = 600.0


async def topic_ids(
    cluster: ClusterSettings, tls: ssl.SSLContext | None, max_frame_bytes: int
) -> dict[str, bytes]:
    """Every topic's id on `cluster`, by name; raises what `ask_bootstrap` raises."""
    answer = await ask_bootstrap(
        cluster, tls, max_frame_bytes, METADATA, METADATA_WITH_IDS,
        {"Topics": None, "AllowAutoTopicCreation": False,
         "IncludeTopicAuthorizedOperations": False},
        float(cluster.connect_timeout_seconds),
    )  # fmt: skip
    return {
        topic["Name"]: topic["TopicId"]
        for topic in answer.get("Topics") or ()
        if topic.get("ErrorCode") == 0
        and topic.get("Name")
        and topic.get("TopicId", NO_ID) != NO_ID
    }


async def moved_topic_ids(
    source: ClusterSettings,
    source_tls: ssl.SSLContext | None,
    target: ClusterSettings,
    target_tls: ssl.SSLContext | None,
    max_frame_bytes: int,
) -> dict[bytes, bytes]:
    """Each topic's id on `source` -> its id on `target` (the topics both have, under
    other ids); empty, with a log line, when either cluster does not say."""
    try:
        old, new = await asyncio.gather(
            topic_ids(source, source_tls, max_frame_bytes),
            topic_ids(target, target_tls, max_frame_bytes),
        )
    except UNANSWERED as exc:
        log.warning(
            "switchover: topic ids not known (%s): clients' Produce v13+ naming the old "
            "cluster's ids are answered UNKNOWN_TOPIC_ID until they refresh metadata",
            why_unanswered(exc),
        )
        return {}
    return {old[name]: new[name] for name in old.keys() & new.keys() if old[name] != new[name]}
