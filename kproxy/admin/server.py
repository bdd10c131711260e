"""The admin HTTP server: /metrics, /healthz, /readyz and /topology (aiohttp).

It runs on the proxy's event loop. Nothing it serves is computed per request on the
data path: /metrics renders the registry, /topology copies the leader table and the
listener table, both only when asked.

* `GET /metrics`: Prometheus text format, or OpenMetrics when the Accept header asks.
* `GET /healthz`: 200 `ok` while the process serves.
* `GET /readyz`: 200 `{"ready": true, "reason": "ready"}` once the bootstrap listener
  serves and the cluster answered at least once; else 503 with the reason.
* `GET /topology[?topic=NAME]`: JSON

      {"proxy": "host-pid", "generated_at": "...Z", "cluster_reached": true,
       "bootstrap": {"kproxy": "h:p", "listener_state": "serving", "servers": ["h:p"]},
       "nodes": [{"id": 1, "advertised": "broker-1:9092", "dial": "10.0.0.5:9092",
                  "kproxy": "127.0.0.1:9101", "listener_state": "serving"}],
       "partitions": [{"topic": "t", "topic_id": "uuid" | null, "partition": 0,
                       "leader": 1, "leader_epoch": 7 | null, "changed_at": "...Z" | null}]}

  `listener_state` is binding, serving, failed, closed, or none (no listener yet);
  `changed_at` is null until kproxy saw that partition's leader move; `cluster` names
  the upstream cluster served now, every configured one, and a switchover's target while
  one is under way.
* `POST /switchover?cluster=NAME` (loopback clients only): move every client to the
  configured cluster NAME (`kproxy.runtime.switchover`); 200 with the switchover's
  summary once it is done, or 404 (no such cluster), 409 (already active, or another
  under way), 503 (unreachable now) with `{"error", "reason"}` and nothing changed.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from kproxy.observe.events import format_ts
from kproxy.protocol.hostport import format_host_port

if TYPE_CHECKING:
    from kproxy.config.settings import Settings
    from kproxy.observe.observability import Observability

log = logging.getLogger("kproxy.admin")

# A refused switchover's HTTP status, by reason (kproxy.runtime.switchover).
_REFUSAL_STATUS = {"unknown": 404, "unreachable": 503, "tls": 503}


class ProxyStatus(Protocol):
    """What the admin server reads from the running proxy (`kproxy.runtime.Proxy`)."""

    def readiness(self) -> tuple[bool, str]: ...

    def topology(self) -> dict[str, Any]: ...

    async def switch(self, cluster: str) -> dict[str, Any]:
        """A switchover's summary, or {"error", "reason"} when it was refused."""
        ...


class _Status:
    """The proxy being served, once there is one."""

    proxy: ProxyStatus | None = None


def json_response(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.Response(
        text=json.dumps(body, indent=1) + "\n", status=status, content_type="application/json"
    )


def make_app(
    observer: Observability,
    status: _Status,
    topology: bool | str = True,
    supervised: bool = False,
) -> web.Application:
    """The admin application: `observer` supplies metrics and the leader table,
    `status.proxy` readiness and the node table. `topology`: serve /topology (True), not
    at all (False), or only to loopback peers ("loopback"). `supervised`: a worker's, on
    the socket only its supervisor reads (which decides who may switch)."""

    async def metrics(request: web.Request) -> web.Response:
        # Prometheus asks for OpenMetrics or the text format in its Accept header.
        body, content_type = observer.metrics.exposition(request.headers.get("Accept"))
        resp = web.Response(body=body)
        resp.headers["Content-Type"] = content_type
        return resp

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        proxy = status.proxy
        ready, reason = (False, "the proxy has not started") if proxy is None else proxy.readiness()
        return json_response({"ready": ready, "reason": reason}, 200 if ready else 503)

    async def topology_view(request: web.Request) -> web.Response:
        if topology == "loopback" and not is_loopback(request.remote):
            return json_response(
                {"error": "/topology is served to loopback clients only (admin.topology)"}, 403
            )
        proxy = status.proxy
        nodes: dict[str, Any] = (
            {"cluster_reached": False, "bootstrap": None, "nodes": []}
            if proxy is None
            else proxy.topology()
        )
        body: dict[str, Any] = {
            "proxy": observer.instance,
            "generated_at": format_ts(time.time()),
        }
        body.update(nodes)
        body["partitions"] = observer.partitions(request.query.get("topic"))
        return json_response(body)

    async def switchover(request: web.Request) -> web.Response:
        if not (supervised or is_loopback(request.remote)):
            return json_response({"error": "/switchover is served to loopback clients only"}, 403)
        proxy, target = status.proxy, request.query.get("cluster")
        if not target:
            return json_response({"error": "name the target: /switchover?cluster=NAME"}, 400)
        if proxy is None:
            return json_response({"error": "the proxy has not started"}, 503)
        answer = await proxy.switch(target)
        refused = answer.get("reason")
        return json_response(answer, 200 if refused is None else _REFUSAL_STATUS.get(refused, 409))

    app = web.Application()
    app.router.add_post("/switchover", switchover)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    if topology:
        app.router.add_get("/topology", topology_view)
    return app


def is_loopback(remote: str | None) -> bool:
    try:
        return remote is not None and ipaddress.ip_address(remote).is_loopback
    except ValueError:  # a Unix socket's peer, never kproxy's case
        return False


class AdminServer:
    """The admin server on `admin.bind_host`:`admin.port` (0 = a port the OS chooses)."""

    def __init__(
        self,
        settings: Settings,
        observer: Observability,
        proxy: ProxyStatus | None = None,
        unix_path: str | None = None,
    ) -> None:
        self.bind_host = settings.admin.bind_host
        self.requested_port = settings.admin.port
        # A worker's (runtime.workers): on a socket only its supervisor reads, which
        # applies admin.topology to what it serves.
        self.unix_path = unix_path
        self.topology = True if unix_path else settings.admin.topology
        self.request_timeout = settings.admin.request_timeout_seconds
        self.observer = observer
        self._status = _Status()
        self._status.proxy = proxy
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    def attach(self, proxy: ProxyStatus) -> None:
        """Serve readiness and topology from `proxy` (started after the admin server,
        so that /healthz answers and /readyz says why not while it starts)."""
        self._status.proxy = proxy

    async def start(self) -> None:
        """Bind and serve; raises OSError when the address cannot be bound."""
        if self._runner is not None:
            return
        app = make_app(self.observer, self._status, self.topology, bool(self.unix_path))
        runner = await serve_app(
            app, self.request_timeout, self.bind_host, self.requested_port, self.unix_path
        )
        self._runner = runner
        if self.unix_path:
            log.info("worker admin server on %s", self.unix_path)
            return
        self._port = bound_port(runner)
        log.info("admin server on http://%s/ (metrics, healthz, readyz, topology)", self.address)

    @property
    def port(self) -> int:
        """The port the server is bound to (the OS's choice when admin.port is 0)."""
        if self._port is None:
            raise RuntimeError("the admin server is not started")
        return self._port

    @property
    def address(self) -> str:
        return format_host_port(self.bind_host, self.port)

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()


async def serve_app(
    app: web.Application,
    timeout: float,
    host: str,
    port: int,
    unix_path: str | None = None,
) -> web.AppRunner:
    """Serve `app` on host:port, or on the Unix socket `unix_path`; raises OSError when
    the address cannot be bound."""
    runner = web.AppRunner(
        app,
        access_log=None,
        handle_signals=False,
        # aiohttp closes a connection that is idle, or has sent part of a request and
        # then nothing, for this long: no half-sent request holds a socket.
        keepalive_timeout=timeout,
    )
    await runner.setup()
    site: web.BaseSite = (
        web.UnixSite(runner, unix_path)
        if unix_path
        else web.TCPSite(runner, host, port, reuse_address=True)
    )
    try:
        await site.start()
    except OSError:
        await runner.cleanup()
        raise
    return runner


def bound_port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        # (host, port) for IPv4, (host, port, flowinfo, scope) for IPv6
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    raise RuntimeError("the admin server has no bound address")


async def start_admin(
    settings: Settings, observer: Observability, proxy: ProxyStatus | None = None
) -> AdminServer:
    """Start an admin server (for `serve()`); stop it with `await server.stop()`."""
    server = AdminServer(settings, observer, proxy)
    await server.start()
    return server
