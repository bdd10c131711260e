"""A switchover: every client moved from one upstream cluster to another, untouched.

kproxy owns the addresses clients know, so it can change the cluster behind them
(`clusters` and `switchover` in the configuration). A switchover, asked for by the
admin endpoint (`POST /switchover?cluster=NAME`), by a reload that changes
`switchover.active`, or by the failover watch:

1. is refused, changing nothing, when the target is unknown, already active, another
   switchover is under way, or the target answers no Metadata request now;
2. fences: new connections wait before they dial (`ConnectionServices.fence`), and every
   open connection reads no new request and closes once what it forwarded is answered,
   between two responses (`switchover.fence_seconds` at most; then it is closed anyway);
   the transactions its transactional producers left open on the old cluster are
   aborted there (`kproxy.runtime.transaction_abort`): never half-moved;
3. moves: the address map forgets the old cluster's nodes and learns the target's, node
   N keeping node N's kproxy port (or SNI name), so what clients were told stays true;
   the source's topic ids are named as the target's in Produce requests for a while
   (`kproxy.session.topic_ids`);
4. lifts the fence: the waiting connections and every client's reconnection dial the
   target. Clients re-learn metadata through kproxy as after any broker restart;
   consumer groups resume from the offsets the target holds (MirrorMaker 2's
   `sync.group.offsets.enabled`): kproxy invents no offset.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import ssl
import time
from typing import TYPE_CHECKING, Any

from kproxy.protocol.hostport import format_host_port
from kproxy.runtime.mapping import cluster_target
from kproxy.runtime.moved_topics import MOVED_IDS_SECONDS, moved_topic_ids
from kproxy.runtime.own_connection import UNANSWERED, MetadataRefused, fetch_brokers, why_unanswered
from kproxy.runtime.tls import TlsSetupError, upstream_context
from kproxy.runtime.transaction_abort import ABORTED, abort_transactions

if TYPE_CHECKING:
    from kproxy.config.settings import ClusterSettings, Settings
    from kproxy.runtime.observer import ProxyObserver
    from kproxy.runtime.registry import Connection
    from kproxy.runtime.services import ConnectionServices

log = logging.getLogger("kproxy.switchover")

_now = time.monotonic
DRAIN_POLL_SECONDS = 0.02  # how often the fence looks whether its connections closed
WATCH_MOST_SECONDS = 5.0  # the failover watch probes the active cluster this often at most
# Aborting open transactions may take this long even when draining took the whole fence.
ABORT_LEAST_SECONDS = 2.0


class SwitchRefused(Exception):
    """A switchover that did not start: `reason` is its metric label, `str()` says why."""

    def __init__(self, reason: str, why: str) -> None:
        super().__init__(why)
        self.reason = reason


class Switchover:
    """Which cluster is served, and the moves from one to another."""

    def __init__(
        self, settings: Settings, services: ConnectionServices, observer: ProxyObserver
    ) -> None:
        self.services = services
        self.observer = observer
        self.active = settings.active_name()
        self.switching: str | None = None
        self.last_switch = -math.inf  # when the last switchover ended (monotonic)
        self._background: set[asyncio.Task[None]] = set()
        self._untranslate: asyncio.TimerHandle | None = None  # ends the topic ids' move
        self.configure(settings)
        observer.active_cluster(self.active, list(self.clusters))

    def configure(self, settings: Settings) -> None:
        """At start and on a reload: the clusters, the fence's bound, failover."""
        self.clusters = settings.upstreams()
        if self.active not in self.clusters:  # the file renamed it: the file's active
            self.active = settings.active_name()
        self.fence_seconds = float(settings.switchover.fence_seconds)
        self.failover = settings.switchover.failover
        self.max_frame_bytes = settings.limits.max_frame_bytes

    def active_settings(self) -> ClusterSettings:
        return self.clusters[self.active]

    def view(self) -> dict[str, Any]:
        """What /topology says of the clusters."""
        return {"active": self.active, "clusters": list(self.clusters), "switching": self.switching}

    # -- a switchover ----------------------------------------------------------------------
    def start(self, target: str, trigger: str) -> None:
        """A switchover in the background (a reload's): its outcome is logged."""

        async def run() -> None:
            with contextlib.suppress(SwitchRefused):  # logged and counted by switch()
                await self.switch(target, trigger)

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)  # held until done: the loop keeps weak references
        task.add_done_callback(self._background.discard)

    async def switch(self, target: str, trigger: str) -> dict[str, Any]:
        """Move every client to `target`; its summary, or SwitchRefused with nothing changed."""
        source = self.active
        try:
            if self.switching is not None:
                raise SwitchRefused(
                    "in_progress", f"a switchover to {self.switching!r} is under way"
                )
            if target not in self.clusters:
                known = ", ".join(self.clusters)
                raise SwitchRefused("unknown", f"no cluster named {target!r} (clusters: {known})")
            if target == source:
                raise SwitchRefused("active", f"{target!r} is the active cluster already")
        except SwitchRefused as refused:
            self._refused(source, target, trigger, refused)
            raise
        self.switching = target
        try:
            cluster = self.clusters[target]
            try:
                tls = upstream_context(cluster)
            except TlsSetupError as exc:
                raise SwitchRefused("tls", f"{target!r}: {exc}") from None
            unreachable = await self.probe(cluster, tls)
            if unreachable is not None:
                raise SwitchRefused("unreachable", f"{target!r} cannot be reached: {unreachable}")
            return await self._move(source, target, cluster, tls, trigger)
        except SwitchRefused as refused:
            self._refused(source, target, trigger, refused)
            raise
        finally:
            self.switching = None

    def _refused(self, source: str, target: str, trigger: str, refused: SwitchRefused) -> None:
        log.warning("switchover to %r (%s) refused: %s", target, trigger, refused)
        self.observer.switchover(
            "refused", trigger, source, target, {"reason": refused.reason, "why": str(refused)}
        )

    async def _move(
        self,
        source: str,
        target: str,
        cluster: ClusterSettings,
        tls: ssl.SSLContext | None,
        trigger: str,
    ) -> dict[str, Any]:
        svc, observer = self.services, self.observer
        began = _now()
        fence = asyncio.Event()
        svc.fence = fence
        fenced = list(svc.registry.connections)
        log.warning(
            "switchover %r -> %r (%s): fencing %d connection(s), %.1f s at most",
            source,
            target,
            trigger,
            len(fenced),
            self.fence_seconds,
        )
        observer.switchover("fenced", trigger, source, target, {"connections": len(fenced)})
        # Asked of both clusters while the fenced connections drain.
        moving = asyncio.ensure_future(self._moved_ids(source, cluster, tls, trigger))
        try:
            for conn in fenced:
                conn.drain("switchover")
            deadline = began + self.fence_seconds
            while _now() < deadline and any(not conn.closed for conn in fenced):
                await asyncio.sleep(DRAIN_POLL_SECONDS)
            cut = [conn for conn in fenced if not conn.closed]
            # Their clients send these again on their next connection (to the target).
            unanswered = sum(conn.unanswered for conn in cut)
            for conn in cut:
                conn.close("switchover")
            # A failover's source does not answer: its transactions end at its timeout.
            aborts = {} if trigger == "failover" else await self._abort(source, fenced, deadline)
            moved = await moving
            fence_seconds = _now() - began
            self.active = target
            svc.addresses.serve_cluster(cluster)
            svc.upstream_tls = tls
            svc.connect_timeout = float(cluster.connect_timeout_seconds)
            discovery = svc.discovery
            discovery.tls, discovery.sasl = tls, cluster.sasl
            discovery.connect_timeout = svc.connect_timeout
            await discovery.refresh()
            self._translate(moved)
        finally:
            moving.cancel()  # done by now, unless the move failed
            svc.fence = None
            fence.set()
        took = _now() - began
        self.last_switch = _now()
        summary: dict[str, Any] = {
            "from": source,
            "to": target,
            "trigger": trigger,
            "fence_seconds": round(fence_seconds, 3),
            "seconds": round(took, 3),
            "drained": len(fenced) - len(cut),
            "cut": len(cut),
            "unanswered": unanswered,
            "transactions_aborted": sum(1 for result in aborts.values() if result == ABORTED),
            "transactions_not_aborted": sum(1 for result in aborts.values() if result != ABORTED),
        }
        log.warning(
            "switchover %r -> %r done in %.2f s (fence %.2f s): %d connection(s) closed "
            "between responses, %d cut at the fence's end (%d request(s) left unanswered)",
            source,
            target,
            took,
            fence_seconds,
            summary["drained"],
            summary["cut"],
            unanswered,
        )
        observer.switchover("completed", trigger, source, target, summary)
        observer.active_cluster(target, list(self.clusters))
        return summary

    async def _abort(
        self, source: str, fenced: list[Connection], deadline: float
    ) -> dict[str, str]:
        """The fenced clients' open transactions on `source`, aborted
        (`kproxy.runtime.transaction_abort`): each transactional id's outcome."""
        ids = frozenset().union(*(conn.transactional_ids for conn in fenced))
        cluster = self.clusters.get(source)
        if not ids or cluster is None:  # none; or a reload renamed the cluster left
            return {}
        seconds = max(deadline - _now(), ABORT_LEAST_SECONDS)
        tls = self.services.upstream_tls  # still the source's
        aborts = await abort_transactions(cluster, tls, ids, self.max_frame_bytes, seconds)
        failed = {key: why for key, why in aborts.items() if why != ABORTED}
        log.warning(
            "switchover: %d transactional id(s) of fenced producers fenced on %r, any open "
            "transaction of theirs aborted%s",
            len(aborts) - len(failed),
            source,
            f"; not (left to transaction.timeout.ms): {failed}" if failed else "",
        )
        return aborts

    async def _moved_ids(
        self, source: str, target: ClusterSettings, tls: ssl.SSLContext | None, trigger: str
    ) -> dict[bytes, bytes]:
        """The source's topic ids -> the target's (`kproxy.session.topic_ids`); none
        after a failover (its source does not answer) or a reload that renamed it."""
        cluster = self.clusters.get(source)
        if trigger == "failover" or cluster is None:
            return {}
        source_tls = self.services.upstream_tls  # still the source's
        return await moved_topic_ids(cluster, source_tls, target, tls, self.max_frame_bytes)

    def _translate(self, moved: dict[bytes, bytes]) -> None:
        """Name the target's ids for the source's in Produce requests, for
        MOVED_IDS_SECONDS: by then clients have learned the target's."""
        if self._untranslate is not None:
            self._untranslate.cancel()
            self._untranslate = None
        policy = self.services.api_policy
        policy.move_topic_ids(moved)
        if moved:
            log.warning(
                "switchover: %d topic id(s) of the cluster left named as the target's in "
                "Produce requests for %.0f s",
                len(moved),
                MOVED_IDS_SECONDS,
            )
            self._untranslate = asyncio.get_running_loop().call_later(
                MOVED_IDS_SECONDS, policy.move_topic_ids, {}
            )

    async def probe(self, cluster: ClusterSettings, tls: ssl.SSLContext | None) -> str | None:
        """None when one of `cluster`'s bootstrap servers answers Metadata (or
        ApiVersions, on a SASL listener kproxy has no credentials for), else why not."""
        timeout = float(cluster.connect_timeout_seconds)
        why = "no bootstrap server"
        for host, port in cluster.bootstrap_servers:
            target = cluster_target(cluster, host, port)
            address = format_host_port(host, port)
            try:
                await asyncio.wait_for(
                    fetch_brokers(target, self.max_frame_bytes, tls, cluster.sasl), timeout
                )
                return None
            except MetadataRefused:
                return None
            except UNANSWERED as exc:
                why = f"{address}: {why_unanswered(exc)}"
        return why

    # -- failover ------------------------------------------------------------------------
    async def watch(self) -> None:
        """`switchover.failover`: the active cluster unreachable for `after_seconds` and
        a standby reachable, switch to the first such standby (in the file's order); never
        sooner than `min_interval_seconds` after the last switchover."""
        down_since: float | None = None
        held_back = False
        while True:
            failover = self.failover
            await asyncio.sleep(min(WATCH_MOST_SECONDS, failover.after_seconds / 3))
            if not failover.enabled or self.switching is not None or len(self.clusters) < 2:
                down_since = None
                continue
            if await self.probe(self.active_settings(), self.services.upstream_tls) is None:
                down_since, held_back = None, False
                continue
            now = _now()
            if down_since is None:
                down_since = now
                log.warning("cluster %r does not answer: failover in %.0f s", self.active,
                            failover.after_seconds)  # fmt: skip
            if now - down_since < failover.after_seconds:
                continue
            since = now - self.last_switch
            if since < failover.min_interval_seconds:
                if not held_back:
                    held_back = True
                    log.warning(
                        "cluster %r does not answer; no failover: the last switchover was "
                        "%.0f s ago (switchover.failover.min_interval_seconds %.0f)",
                        self.active,
                        since,
                        failover.min_interval_seconds,
                    )
                continue
            await self._fail_over()
            down_since = None

    async def _fail_over(self) -> None:
        for name, cluster in self.clusters.items():
            if name == self.active:
                continue
            try:
                tls = upstream_context(cluster)
                if await self.probe(cluster, tls) is not None:
                    continue
                await self.switch(name, "failover")
            except TlsSetupError:
                continue
            except SwitchRefused:
                continue
            return
        log.warning("cluster %r does not answer, and no standby does either", self.active)
