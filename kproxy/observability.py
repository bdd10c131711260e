"""What kproxy reports: metrics, the event log and the topology, fed by the runtime.

`Observability` is the `ProxyObserver` that `kproxy run` (and `kproxy demo`) give their
ProxyContext. Every fact that is both counted and logged is counted and queued at the
same place, so with no events dropped the event log's counts per type equal the
metrics (`kproxy_events_dropped_total` says when they cannot).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kproxy.events import (
    CONNECTION,
    LEADER_CHANGE,
    NODE_DISCOVERED,
    RECOVERY,
    REDIRECT,
    REQUEST_SAMPLE,
    EventLog,
    format_ts,
    instance_id,
)
from kproxy.leadership import NO_FACTS, LeaderTable, topic_id_text
from kproxy.metrics import KproxyMetrics
from kproxy.protocol.apis import api_name
from kproxy.protocol.walker import LeaderObservation
from kproxy.proxy.addresses import join_host_port
from kproxy.proxy.observer import ProxyObserver

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from kproxy.config import Settings
    from kproxy.proxy.server import ProxyContext

log = logging.getLogger("kproxy.observability")

BOOTSTRAP_LISTENER = "bootstrap"  # kproxy.proxy.server.BOOTSTRAP


class Observability(ProxyObserver):
    """Metrics + leader table + event log behind the runtime's observer hooks."""

    def __init__(
        self,
        settings: Settings,
        *,
        registry: CollectorRegistry | None = None,
        leader_table: LeaderTable | None = None,
        instance: str | None = None,
        sample: Callable[[], float] = random.random,
        runtime_collectors: bool = True,
    ) -> None:
        self.settings = settings
        self.instance = instance or instance_id()
        self.metrics = KproxyMetrics(
            topic_labels=settings.metrics.topic_labels,
            registry=registry,
            runtime_collectors=runtime_collectors,
        )
        self.leaders_table = leader_table if leader_table is not None else LeaderTable()
        self.context: ProxyContext | None = None
        ev = settings.events
        self.sample_rate = ev.request_sample_rate if ev.enabled else 0.0
        self._sample = sample
        self.events: EventLog | None = None
        if ev.enabled:
            metrics = self.metrics
            self.events = EventLog(
                ev.dir,
                instance=self.instance,
                max_file_bytes=ev.max_file_bytes,
                rotate_seconds=ev.rotate_seconds,
                queue_size=ev.queue_size,
                on_written=metrics.event_written,
                on_dropped=metrics.event_dropped,
            )
        # Plain counts for `kproxy demo`'s status line.
        self.leader_changes = 0
        self.redirects_with_leader = 0
        self.redirects_with_endpoint = 0
        self.redirects_without_leader = 0
        self.recoveries = 0

    def _emit(self, event_type: str, fields: dict[str, Any]) -> None:
        events = self.events
        if events is not None:
            events.emit(event_type, fields)

    # -- ProxyObserver ---------------------------------------------------------------------
    def attached(self, context: ProxyContext) -> None:
        self.context = context

    def connection_opened(self, listener: str) -> None:
        self.metrics.connection_opened(listener)
        self._emit(CONNECTION, {"action": "open", "listener": listener, "cause": None})

    def connection_closed(self, listener: str, cause: str) -> None:
        self.metrics.connection_closed(listener, cause)
        self._emit(CONNECTION, {"action": "close", "listener": listener, "cause": cause})

    def frame_error(self, side: str, reason: str) -> None:
        self.metrics.frame_errors.labels(side, reason).inc()

    def upstream_connect_failed(self, address: str, reason: str) -> None:
        self.metrics.upstream_connect_failures.labels(reason).inc()

    def frame(self, api_key: int, direction: str, size: int) -> None:
        self.metrics.frame(api_key, direction, size)

    def response(
        self,
        api_key: int,
        version: int,
        client_id: str | None,
        total_seconds: float,
        upstream_seconds: float,
    ) -> None:
        self.metrics.response(api_key, total_seconds, upstream_seconds)
        rate = self.sample_rate
        if rate > 0.0 and self._sample() < rate:
            self._emit(
                REQUEST_SAMPLE,
                {
                    "api": api_name(api_key),
                    "version": version,
                    "client_id": client_id,
                    "total_ms": round(total_seconds * 1000.0, 3),
                    "upstream_ms": round(upstream_seconds * 1000.0, 3),
                },
            )

    def leaders(
        self,
        api_key: int,
        client_id: str | None,
        node_id: int | None,
        observations: list[LeaderObservation],
        endpoint_nodes: frozenset[int],
    ) -> None:
        facts = self.leaders_table.observe(
            api_key, client_id, node_id, observations, endpoint_nodes
        )
        if facts is NO_FACTS:
            return
        metrics = self.metrics
        for change in facts.changes:
            self.leader_changes += 1
            source = api_name(change.source_api)
            metrics.leader_change(change.source_api, change.topic)
            log.debug(
                "leader of %s-%d: %d -> %d (epoch %s -> %s), first seen in %s",
                change.topic,
                change.partition,
                change.old_leader,
                change.new_leader,
                change.old_epoch,
                change.new_epoch,
                source,
            )
            self._emit(
                LEADER_CHANGE,
                {
                    "topic": change.topic,
                    "topic_id": topic_id_text(change.topic_id),
                    "partition": change.partition,
                    "old_leader": change.old_leader,
                    "new_leader": change.new_leader,
                    "old_epoch": change.old_epoch,
                    "new_epoch": change.new_epoch,
                    "source_api": source,
                },
            )
        for redirect in facts.redirects:
            if redirect.to_node is None:
                self.redirects_without_leader += 1
            else:
                self.redirects_with_leader += 1
                if redirect.with_endpoint:
                    self.redirects_with_endpoint += 1
            metrics.redirect(redirect.api_key, redirect.from_node, redirect.to_node)
            self._emit(
                REDIRECT,
                {
                    "api": api_name(redirect.api_key),
                    "client_id": redirect.client_id,
                    "topic": redirect.topic,
                    "topic_id": topic_id_text(redirect.topic_id),
                    "partition": redirect.partition,
                    "error_code": redirect.error_code,
                    "from_node": redirect.from_node,
                    "to_node": redirect.to_node,
                    "with_endpoint": redirect.with_endpoint,
                },
            )
        for recovery in facts.recoveries:
            self.recoveries += 1
            metrics.recovery(recovery.seconds, recovery.with_endpoint)
            self._emit(
                RECOVERY,
                {
                    "topic": recovery.topic,
                    "topic_id": topic_id_text(recovery.topic_id),
                    "partition": recovery.partition,
                    "client_id": recovery.client_id,
                    "ms": round(recovery.seconds * 1000.0, 3),
                    "with_endpoint": recovery.with_endpoint,
                },
            )

    def endpoints(self, api_key: int, rewritten: int, removed: int) -> None:
        self.metrics.endpoints(api_key, rewritten, removed)

    def node_discovered(self, node_id: int, upstream: str, advertised: str) -> None:
        self.metrics.nodes_discovered.inc()
        self._emit(
            NODE_DISCOVERED, {"node_id": node_id, "upstream": upstream, "advertised": advertised}
        )

    def api_versions_clamped(self, dropped: int, lowered: int) -> None:
        self.metrics.api_versions_clamped.inc()

    def cluster_reached(self) -> None:
        self.metrics.cluster_reached.set(1)

    # -- what the admin server and the demo read ------------------------------------------------
    def readiness(self) -> tuple[bool, str]:
        """(ready, reason): the bootstrap listener serves and the cluster was reached."""
        ctx = self.context
        if ctx is None:
            return False, "the proxy has not started"
        listener = ctx.listeners.get(BOOTSTRAP_LISTENER)
        if listener is None or listener.state != "serving":
            state = "missing" if listener is None else listener.state
            return False, f"the bootstrap listener is {state}"
        if not ctx.cluster_reached:
            return False, "the cluster has not been reached yet"
        return True, "ready"

    def topology(self, topic: str | None = None) -> dict[str, Any]:
        """Nodes as kproxy maps them and partitions' leaders as kproxy last saw them."""
        ctx = self.context
        nodes: list[dict[str, Any]] = []
        bootstrap: dict[str, Any] | None = None
        if ctx is not None:
            host = ctx.advertised_host
            boot = ctx.listeners.get(BOOTSTRAP_LISTENER)
            bootstrap = {
                "kproxy": join_host_port(host, boot.port) if boot is not None else None,
                "listener_state": boot.state if boot is not None else "none",
                "servers": [join_host_port(h, p) for h, p in ctx.book.bootstrap],
            }
            by_node = {
                lst.node_id: lst for lst in ctx.listeners.values() if lst.node_id is not None
            }
            for node_id in sorted(set(by_node) | set(ctx.book.advertised)):
                adv = ctx.book.advertised.get(node_id)
                listener = by_node.get(node_id)
                serving = listener is not None and listener.state != "failed"
                nodes.append(
                    {
                        "id": node_id,
                        "advertised": join_host_port(*adv) if adv is not None else None,
                        "dial": join_host_port(*ctx.book.dial_address(*adv))
                        if adv is not None
                        else None,
                        "kproxy": join_host_port(host, listener.port)
                        if listener is not None and serving
                        else None,
                        "listener_state": listener.state if listener is not None else "none",
                    }
                )
        partitions = [
            {
                "topic": p.topic,
                "topic_id": p.topic_id,
                "partition": p.partition,
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "changed_at": format_ts(p.changed_at) if p.changed_at is not None else None,
            }
            for p in self.leaders_table.snapshot()
            if topic is None or p.topic == topic
        ]
        return {
            "proxy": self.instance,
            "generated_at": format_ts(time.time()),
            "cluster_reached": bool(ctx is not None and ctx.cluster_reached),
            "bootstrap": bootstrap,
            "nodes": nodes,
            "partitions": partitions,
        }

    def summary(self) -> str:
        """One line for `kproxy demo`: what kproxy saw of the cluster's leadership."""
        return (
            f"{self.leader_changes} leader changes, "
            f"{self.redirects_with_leader} redirects to a new leader "
            f"({self.redirects_with_endpoint} with its endpoint), "
            f"{self.redirects_without_leader} without one, {self.recoveries} recoveries"
        )

    def close(self) -> None:
        """Write out the event log (blocks until it is written: call at shutdown)."""
        if self.events is not None:
            self.events.close()
