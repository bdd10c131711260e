"""The proxy of one kproxy process: its parts put together, started and drained.

It composes the address map, the listeners, cluster discovery and the connection
registry, and answers the admin server's two questions (`readiness`, `topology`)
without the admin server reaching into any of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from kproxy.protocol.hostport import format_host_port
from kproxy.runtime.client import ClientConnection
from kproxy.runtime.describe import describe
from kproxy.runtime.discovery import ClusterDiscovery, NodeReports
from kproxy.runtime.listeners import BOOTSTRAP, ListenerSet
from kproxy.runtime.mapping import AddressMap
from kproxy.runtime.observer import ProxyObserver
from kproxy.runtime.principals import Principals
from kproxy.runtime.quorum import QuorumMap, controller_listener_name
from kproxy.runtime.quotas import configure as configure_quotas
from kproxy.runtime.quotas import quota_book
from kproxy.runtime.ratelog import RateLimitedLog
from kproxy.runtime.registry import ConnectionRegistry
from kproxy.runtime.services import ConnectionServices
from kproxy.runtime.switchover import Switchover, SwitchRefused
from kproxy.runtime.tls import ServerTls, upstream_context
from kproxy.runtime.tls_reload import CertificateReloader
from kproxy.runtime.upstream import FD_EXHAUSTED
from kproxy.session import SessionLimits
from kproxy.session.admission import CLIENT_REFUSED_APIS
from kproxy.session.policy import ApiPolicy

if TYPE_CHECKING:
    from kproxy.config.settings import LimitSettings, Settings

log = logging.getLogger("kproxy.proxy")


def session_limits(limits: LimitSettings) -> SessionLimits:
    return SessionLimits(
        limits.max_frame_bytes, limits.max_in_flight_requests, limits.stream_responses_after_bytes
    )


class Proxy:
    """Listeners, mapping, discovery and connections of one kproxy process."""

    def __init__(self, settings: Settings, observer: ProxyObserver | None = None) -> None:
        self.settings = settings
        self.observer = observer or ProxyObserver()
        lst = settings.listeners
        limits = settings.limits
        self.addresses = AddressMap(settings.cluster, lst)
        self.quorum = (
            QuorumMap(settings.quorum, lst.advertised_host, settings.cluster.dial_address)
            if settings.quorum.controllers
            else None
        )
        self.listeners = ListenerSet(
            lst.bind_host,
            self.addresses,
            self._new_connection,
            self.observer.listener_bind_failed,
            reuse_port=settings.runtime.workers != 1,
        )
        self.reports = NodeReports(self.addresses, self.observer, lst.max_node_id)
        connect_timeout = float(settings.cluster.connect_timeout_seconds)
        # TLS files are read here: one that cannot be loaded stops kproxy before it listens.
        self.client_tls = None
        if lst.tls is not None:
            names = self._known_server_name if lst.sni is not None else None
            self.client_tls = ServerTls(lst.tls, names)
        self.certificates = (
            CertificateReloader(self.client_tls, self.observer) if self.client_tls else None
        )
        upstream_tls = upstream_context(settings.cluster)
        self.discovery = ClusterDiscovery(
            self.addresses,
            self.listeners,
            self.reports,
            limits.max_frame_bytes,
            connect_timeout,
            upstream_tls,
            settings.cluster.sasl,
        )
        self.registry = ConnectionRegistry(self.observer, limits)
        self.quotas = quota_book(settings.quotas)
        self.observer.quotas_configured(self.quotas)
        self.principals = Principals(settings.principals, self.observer)
        self.services = ConnectionServices(
            self.addresses,
            self.listeners,
            self.discovery,
            self.reports,
            self.registry,
            self.observer,
            session_limits(limits),
            CLIENT_REFUSED_APIS if lst.role == "client" else frozenset(),
            ApiPolicy(
                lst.name,
                lst.denied_apis(),
                lst.advertises_denied(),
                lst.authorizer(),
                lst.tenants(),
            ),
            limits.write_buffer_high_bytes,
            connect_timeout,
            self.client_tls,
            upstream_tls,
            self.quorum,
            lst.proxy_protocol
            if lst.proxy_protocol is not None and lst.proxy_protocol.mode != "off"
            else None,
            self.quotas,
            self.principals,
        )
        self.switchover = Switchover(settings, self.services, self.observer)
        self._tasks: list[asyncio.Task[None]] = []
        self._accept_errors = RateLimitedLog(log)

    def _known_server_name(self, name: str | None) -> bool:
        return self.addresses.sni_target(name)[0]

    def _new_connection(self, listener: str, node_id: int | None) -> ClientConnection:
        return ClientConnection(self.services, listener, node_id)

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self) -> None:
        try:
            self._open_first_listeners()
        except OSError:
            # A start that fails part-way leaves nothing listening: the ports it had
            # opened are free for the next attempt (or another process).
            self.listeners.stop_accepting()
            await self.listeners.wait_closed()
            raise
        await asyncio.sleep(0)  # let the bootstrap server start
        loop = asyncio.get_running_loop()
        self._count_accept_errors(loop)
        self._tasks = [
            loop.create_task(self.discovery.run()),
            loop.create_task(self.registry.run_sweeps()),
            loop.create_task(self.switchover.watch()),
        ]
        if self.certificates is not None:
            self._tasks.append(loop.create_task(self.certificates.watch()))

    def _open_first_listeners(self) -> None:
        """The bootstrap listener and, with a quorum, every controller's: OSError for the
        first that cannot open."""
        port = self.settings.listeners.bootstrap_port
        if self.listeners.open(None, port) is None:
            raise OSError(f"cannot listen on {format_host_port(self.listeners.bind_host, port)}")
        if self.quorum is not None:
            # Controllers reach each other through these ports from their first moment
            # (KIP-853 --initial-controllers names them): they open with the bootstrap.
            for node_id, controller in self.quorum.controllers.items():
                if self.listeners.open_controller(self.quorum, node_id, controller.port) is None:
                    raise OSError(
                        "cannot listen on "
                        f"{format_host_port(self.listeners.bind_host, controller.port)} "
                        f"for controller {node_id}"
                    )

    def apply(self, settings: Settings) -> None:
        """A reloaded configuration's live keys (`kproxy.config.reload_table.LIVE`), for new
        connections and at once; established connections keep what they were opened
        with. TLS files are loaded first: on TlsSetupError nothing has changed."""
        lst, limits = settings.listeners, settings.limits
        # The cluster served now, as the new file describes it: a switchover may have
        # moved away from the one the file names (a change of that name is one, below).
        switchover = self.switchover
        switchover.configure(settings)
        cluster = switchover.active_settings()
        upstream_tls = upstream_context(cluster)
        tls_changed = lst.tls != self.settings.listeners.tls
        if self.client_tls is not None and lst.tls is not None and tls_changed:
            self.client_tls.replace(lst.tls)
        previous, self.settings = self.settings, settings
        self.addresses.configure(cluster, lst)
        if self.quorum is not None:
            self.quorum.configure(cluster.dial_address)
        svc = self.services
        svc.limits = session_limits(limits)
        svc.write_buffer_high = limits.write_buffer_high_bytes
        svc.connect_timeout = float(cluster.connect_timeout_seconds)
        svc.upstream_tls = upstream_tls
        svc.api_policy.update(
            lst.name, lst.denied_apis(), lst.advertises_denied(), lst.authorizer(), lst.tenants()
        )
        discovery = self.discovery
        discovery.tls, discovery.sasl = upstream_tls, cluster.sasl
        discovery.connect_timeout = svc.connect_timeout
        discovery.max_frame_bytes = limits.max_frame_bytes
        self.reports.max_node_id = lst.max_node_id
        self.registry.set_limits(limits)
        configure_quotas(self.quotas, settings.quotas)
        self.principals.configure(settings.principals)
        if previous.active_name() != settings.active_name():
            switchover.start(settings.active_name(), "reload")

    async def switch(self, cluster: str) -> dict[str, Any]:
        """The admin endpoint's switchover (`kproxy.runtime.switchover`): its summary, or
        why it was refused."""
        try:
            return await self.switchover.switch(cluster, "admin")
        except SwitchRefused as refused:
            return {"error": str(refused), "reason": refused.reason}

    def reload_certificates(self, trigger: str) -> bool:
        """SIGHUP: load the listeners' TLS files again (True when there are none)."""
        return self.certificates is None or self.certificates.reload(trigger)

    def _count_accept_errors(self, loop: asyncio.AbstractEventLoop) -> None:
        """The standard loop reports a refused accept (EMFILE, ENFILE) to its exception
        handler and retries a second later; count and log it (uvloop drops such
        connections silently, which the descriptor-derived connection limit prevents)."""
        previous = loop.get_exception_handler()

        def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            exc = context.get("exception")
            if isinstance(exc, OSError) and exc.errno in FD_EXHAUSTED:
                self.observer.accept_error("fd_exhausted")
                self._accept_errors.warning(
                    "accept",
                    "cannot accept a connection: %s (open-file limit reached)",
                    describe(exc),
                )
                return
            if previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)

        loop.set_exception_handler(handler)

    @property
    def bootstrap_port(self) -> int:
        return self.listeners.by_name[BOOTSTRAP].port

    async def stop(self, grace_seconds: float, now: asyncio.Event | None = None) -> None:
        """Stop accepting; each connection reads no new request and closes once its
        forwarded requests are answered (a consumer's long-poll Fetch included: the
        broker answers it within its max wait). Returns as soon as every connection is
        closed; `grace_seconds` is a cap, and `now` being set cuts it short."""
        self.discovery.running = False
        if self.certificates is not None:
            self.certificates.running = False
        self.listeners.stop_accepting()
        self.registry.drain()
        waits = [asyncio.ensure_future(self.registry.empty.wait())]
        if now is not None:
            waits.append(asyncio.ensure_future(now.wait()))
        _, pending = await asyncio.wait(
            waits, timeout=grace_seconds, return_when=asyncio.FIRST_COMPLETED
        )
        for wait in pending:
            wait.cancel()
        self.registry.close_all("shutdown")
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.listeners.wait_closed()

    # -- what the admin server reads ---------------------------------------------------------------
    def readiness(self) -> tuple[bool, str]:
        """(ready, reason): the bootstrap listener and every node listener kproxy needs
        serve, the cluster was reached, and at least one of its nodes can be dialled."""
        listener = self.listeners.get(BOOTSTRAP)
        if listener is None or listener.state != "serving":
            state = "missing" if listener is None else listener.state
            return False, f"the bootstrap listener is {state}"
        failed = self.listeners.failures()
        if failed:
            host = self.listeners.bind_host
            return False, "; ".join(
                f"{lst.name} cannot listen on {format_host_port(host, lst.port)} ({lst.error}); "
                "retrying"
                for lst in failed
            )
        if not self.discovery.reached:
            return False, "the cluster has not been reached yet"
        unreachable = self.discovery.resolution.none_dialable()
        if unreachable is not None:
            return False, unreachable
        return True, "ready"

    def topology(self) -> dict[str, Any]:
        """The bootstrap listener and every node as kproxy maps it."""
        addresses = self.addresses
        host = addresses.advertised_host
        boot = self.listeners.get(BOOTSTRAP)
        bootstrap = {
            "kproxy": format_host_port(host, boot.port) if boot is not None else None,
            "listener_state": boot.state if boot is not None else "none",
            "servers": [format_host_port(h, p) for h, p in addresses.bootstrap],
        }
        by_node = {
            lst.node_id: lst for lst in self.listeners.by_name.values() if lst.node_id is not None
        }
        nodes: list[dict[str, Any]] = []
        for node_id in sorted(set(by_node) | set(addresses.advertised)):
            adv = addresses.advertised.get(node_id)
            listener = by_node.get(node_id)
            ours = addresses.kproxy_address(node_id)
            nodes.append(
                {
                    "id": node_id,
                    "advertised": format_host_port(*adv) if adv is not None else None,
                    "dial": format_host_port(*addresses.dial_address(*adv))
                    if adv is not None
                    else None,
                    "kproxy": format_host_port(*ours) if ours is not None else None,
                    "listener_state": listener.state
                    if listener is not None
                    else ("sni" if addresses.sni is not None else "none"),
                }
            )
        view = {
            "cluster": self.switchover.view(),
            "cluster_reached": self.discovery.reached,
            "bootstrap": bootstrap,
            "nodes": nodes,
        }
        if self.quotas.active:  # the clients a quota throttles now (quotas)
            view["throttled"] = self.quotas.throttled(time.perf_counter())  # as sessions
        if self.quorum is not None:
            view["quorum"] = self._quorum_view(self.quorum)
        return view

    def _quorum_view(self, quorum: QuorumMap) -> dict[str, Any]:
        """The controllers kproxy carries, and the quorum's leader as kproxy saw it pass."""
        seen = self.observer.quorum_leader()
        voters = []
        for node_id in sorted(quorum.controllers):
            listener = self.listeners.get(controller_listener_name(node_id))
            real = quorum.real_address(node_id)
            ours = quorum.kproxy_address(node_id)
            voters.append(
                {
                    "id": node_id,
                    "kproxy": format_host_port(*ours) if ours is not None else None,
                    "address": format_host_port(*real) if real is not None else None,
                    "dial": format_host_port(*quorum.dial_address(*real))
                    if real is not None
                    else None,
                    "listener_state": listener.state if listener is not None else "none",
                }
            )
        return {
            "controllers": voters,
            "leader": seen[0] if seen is not None else None,
            "epoch": seen[1] if seen is not None else None,
        }
