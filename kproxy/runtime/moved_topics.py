"""The topic ids a switchover moves its clients between (`kproxy.session.topic_ids`):
each cluster's ids by topic name, from kproxy's own Metadata request, paired by name."""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TYPE_CHECKING, Final

from kproxy.protocol.hostport import format_host_port
from kproxy.runtime.discovery import UNANSWERED, why_unanswered
from kproxy.runtime.mapping import cluster_target
from kproxy.runtime.own_connection import own_exchange

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


class TopicIdsUnknown(Exception):
    """No bootstrap server of a cluster answered kproxy's Metadata request."""


async def topic_ids(
    cluster: ClusterSettings, tls: ssl.SSLContext | None, max_frame_bytes: int
) -> dict[str, bytes]:
    """Every topic's id on `cluster`, by name; TopicIdsUnknown when none answers."""
    why = "no bootstrap server"
    for host, port in cluster.bootstrap_servers:
        target = cluster_target(cluster, host, port)
        try:
            async with asyncio.timeout(float(cluster.connect_timeout_seconds)):
                async with own_exchange(target, max_frame_bytes, tls, cluster.sasl) as exchange:
                    answer = await exchange.ask_value(
                        METADATA,
                        METADATA_WITH_IDS,
                        {"Topics": None, "AllowAutoTopicCreation": False,
                         "IncludeTopicAuthorizedOperations": False},
                    )  # fmt: skip
        except UNANSWERED as exc:
            why = f"{format_host_port(host, port)}: {why_unanswered(exc)}"
            continue
        return {
            topic["Name"]: topic["TopicId"]
            for topic in answer.get("Topics") or ()
            if topic.get("ErrorCode") == 0
            and topic.get("Name")
            and topic.get("TopicId", NO_ID) != NO_ID
        }
    raise TopicIdsUnknown(why)


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
    except TopicIdsUnknown as exc:
        log.warning(
            "switchover: topic ids not known (%s): clients' Produce v13+ naming the old "
            "cluster's ids are answered UNKNOWN_TOPIC_ID until they refresh metadata",
            exc,
        )
        return {}
    return {old[name]: new[name] for name in old.keys() & new.keys() if old[name] != new[name]}
