"""The live client connections: admission against the connection limits, the idle and
first-request timeouts, and the drain at shutdown."""

from __future__ import annotations

import asyncio
import logging
import random
import resource
import time
from collections import Counter
from typing import Protocol

from kproxy.config.settings import LimitSettings
from kproxy.runtime.observer import ProxyObserver
from kproxy.runtime.ratelog import RateLimitedLog

log = logging.getLogger("kproxy.connections")
_now = time.perf_counter
# Descriptors kept back from client connections: listeners, the admin server, the event
# log, discovery and the interpreter's own files.
RESERVED_DESCRIPTORS = 64


class Connection(Protocol):
    listener: str
    address: tuple[str, int] | tuple[str, int, int, int] | None
    preamble: bytes | None  # a PROXY protocol header awaited (kproxy.runtime.proxy_header)
    last_active: float
    first_request_due_from: float | None  # None once a whole first request came
    closed: bool

    @property
    def peer(self) -> str: ...

    @property
    def peer_ip(self) -> str: ...

    @property
    def handshaking(self) -> bool: ...

    @property
    def principal(self) -> str: ...

    @property
    def tenant(self) -> str | None: ...

    @property
    def transactional_ids(self) -> frozenset[str]: ...

    @property
    def unanswered(self) -> int: ...

    def drain(self, cause: str = "shutdown") -> None: ...

    def close(self, cause: str) -> None: ...


def descriptor_limit_connections() -> int:
    """Client connections the open-file limit allows: two descriptors each (the client's
    and its broker's), after a reserve."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 20
    return max(1, (soft - RESERVED_DESCRIPTORS) // 2)


class ConnectionRegistry:
    """Every live client connection of one kproxy process."""

    def __init__(self, observer: ProxyObserver, limits: LimitSettings) -> None:
        self.observer = observer
        self.set_limits(limits)
        self.connections: set[Connection] = set()
        self.per_ip: Counter[str] = Counter()
        # limits.max_connection_age_seconds: when each connection is to close (none made
        # without the limit).
        self.expires: dict[Connection, float] = {}
        # limits.max_connection_creation_rate: per client IP, (tokens, when last counted)
        self.creation: dict[str, tuple[float, float]] = {}
        self.accepting = True
        self.empty = asyncio.Event()
        self.empty.set()
        self.refusals = RateLimitedLog(log)

    def set_limits(self, limits: LimitSettings) -> None:
        """At start, and on a reload: new connections meet the new caps at once."""
        max_connections = limits.max_connections
        fd_cap = descriptor_limit_connections()
        if max_connections is not None and max_connections > fd_cap:
            log.warning(
                "limits.max_connections %d is more than the open-file limit allows (%d "
                "connections at two descriptors each): raise the limit (ulimit -n) or expect "
                "refusals for lack of descriptors",
                max_connections,
                fd_cap,
            )
        self.max_connections = max_connections or fd_cap
        self.limit_reason = "connection_limit" if max_connections else "descriptor_limit"
        self.max_per_ip = limits.max_connections_per_client_ip
        self.idle_timeout = limits.idle_timeout_seconds
        self.first_request_timeout = limits.first_request_timeout_seconds
        self.max_age = limits.max_connection_age_seconds
        self.age_jitter = limits.connection_age_jitter
        self.creation_rate = limits.max_connection_creation_rate

    def opened(self, conn: Connection) -> bool:
        """Admit a new connection: False, with it closed, over a cap. One that awaits a
        PROXY protocol header meets the per-IP cap once its client's address is known
        (`address_known`): the socket's peer is the load balancer."""
        reason = None
        if not self.accepting:
            reason = "shutting_down"
        elif len(self.connections) >= self.max_connections:
            reason = self.limit_reason
        elif conn.preamble is None and self._over_ip_cap(conn):
            reason = "client_ip_limit"
        elif self.creation_rate is not None and not self._may_create(conn.peer_ip):
            reason = "connection_rate"
        if reason is not None:
            self._refuse(conn, reason)
            return False
        self.connections.add(conn)
        if self.max_age is not None:
            spread = 1.0 + self.age_jitter * random.uniform(-1.0, 1.0)
            self.expires[conn] = _now() + self.max_age * spread
        if conn.preamble is None:
            self.per_ip[conn.peer_ip] += 1
        self.empty.clear()
        self.observer.connection_opened(conn.listener, conn.peer_ip)
        return True

    def address_known(self, conn: Connection, address: tuple[str, int] | None) -> bool:
        """The client's address a PROXY protocol header gave (None: the socket's peer
        stands): counted under it, against its per-IP cap. False, with the connection
        closed, over the cap."""
        if address is not None:
            conn.address = address
        if self._over_ip_cap(conn):
            self._refuse(conn, "client_ip_limit")
            return False
        if conn in self.connections:
            self.per_ip[conn.peer_ip] += 1
        return True

    def _may_create(self, ip: str) -> bool:
        """A token bucket per client IP, refilled at `creation_rate` a second and holding
        at most that many (one at least): whether a new connection may take a token."""
        rate = self.creation_rate
        assert rate is not None
        now = _now()
        tokens, then = self.creation.get(ip, (max(rate, 1.0), now))
        tokens = min(max(rate, 1.0), tokens + (now - then) * rate)
        if tokens < 1.0:
            self.creation[ip] = (tokens, now)
            return False
        self.creation[ip] = (tokens - 1.0, now)
        return True

    def _over_ip_cap(self, conn: Connection) -> bool:
        return self.max_per_ip is not None and self.per_ip[conn.peer_ip] >= self.max_per_ip

    def _refuse(self, conn: Connection, reason: str) -> None:
        self.observer.connection_refused(conn.listener, reason)
        self.refusals.warning(
            reason, "refusing client %s on %s: %s", conn.peer, conn.listener, reason
        )
        conn.close(reason)

    def closed(self, conn: Connection, cause: str) -> None:
        if conn in self.connections:
            self.connections.discard(conn)
            if conn.preamble is None:  # counted under its address (not while awaiting it)
                ip = conn.peer_ip
                self.per_ip[ip] -= 1
                if self.per_ip[ip] <= 0:
                    del self.per_ip[ip]
            self.expires.pop(conn, None)
            self.observer.connection_closed(
                conn.listener, cause, conn.principal, conn.peer_ip, conn.tenant
            )
            if not self.connections:
                self.empty.set()

    def sweep(self) -> None:
        """Close connections idle too long, and clients that never sent a first request;
        those past their age limit close once their requests are answered."""
        now = _now()
        for conn, when in list(self.expires.items()):
            if now >= when:
                del self.expires[conn]
                conn.drain("max_age")
        self._forget_full_buckets(now)
        for conn in list(self.connections):
            due_from = conn.first_request_due_from
            if due_from is not None and now - due_from > self.first_request_timeout:
                if conn.handshaking:
                    self._handshake_timeout(conn)
                    continue
                self.refusals.warning(
                    "first_request_timeout",
                    "closing client %s on %s: no whole request within %.0f s",
                    conn.peer,
                    conn.listener,
                    self.first_request_timeout,
                )
                conn.close("first_request_timeout")
            elif now - conn.last_active > self.idle_timeout:
                log.info(
                    "closing client %s on %s: idle for %.0f s",
                    conn.peer,
                    conn.listener,
                    now - conn.last_active,
                )
                conn.close("idle_timeout")

    def _forget_full_buckets(self, now: float) -> None:
        """Client IPs whose bucket has filled up again hold no entry (the map stays as
        small as the addresses that connected in the last few seconds)."""
        rate = self.creation_rate
        if rate is None:
            self.creation.clear()
            return
        full = max(rate, 1.0)
        for ip, (tokens, then) in list(self.creation.items()):
            if tokens + (now - then) * rate >= full:
                del self.creation[ip]

    def _handshake_timeout(self, conn: Connection) -> None:
        self.observer.tls_handshake_failed("client", "timeout")
        self.refusals.warning(
            "tls_handshake_timeout",
            "closing client %s on %s: TLS handshake not finished within %.0f s",
            conn.peer,
            conn.listener,
            self.first_request_timeout,
        )
        conn.close("tls_handshake_timeout")

    async def run_sweeps(self) -> None:
        interval = min(self.idle_timeout, self.first_request_timeout, self.max_age or 60.0) / 4
        while True:
            await asyncio.sleep(min(5.0, max(0.05, interval)))
            self.sweep()

    def drain(self) -> None:
        self.accepting = False
        for conn in list(self.connections):
            conn.drain()

    def close_all(self, cause: str) -> None:
        for conn in list(self.connections):
            conn.close(cause)
