"""The supervisor's admin server (`runtime.workers`): one answer for many workers.

Each worker serves its own admin endpoints on a Unix socket only the supervisor reads;
this server, on `admin.bind_host`:`admin.port`, asks every worker and answers once:

* `/metrics`: every worker's scrape merged (`kproxy.admin.merge`), and the supervisor's
  own `kproxy_workers` and `kproxy_worker_restarts_total`;
* `/readyz`: ready when every worker is ready, else the first worker's reason not to be;
* `/topology`: the first worker that answers (each learns the same cluster), under
  `admin.topology` as a single process serves it;
* `/healthz`: 200 while the supervisor runs;
* `POST /switchover`: passed to every worker at once (each fences and moves its own
  connections); 200 when every worker switched.

A worker that does not answer within `admin.request_timeout_seconds` (it is restarting)
leaves the scrape without its series for that moment, and makes `/readyz` say so.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from kproxy.admin.merge import MergedScrape, merge_expositions
from kproxy.admin.server import bound_port, is_loopback, json_response, serve_app
from kproxy.observe.supervisor_specs import WORKER_RESTARTS, WORKERS
from kproxy.protocol.hostport import format_host_port

if TYPE_CHECKING:
    from kproxy.config.settings import Settings

log = logging.getLogger("kproxy.admin")


class WorkerAnswer:
    """One worker's answer to one request: its status and body, or why there is none."""

    def __init__(self, index: int, status: int, body: bytes, error: str = "") -> None:
        self.index = index
        self.status = status
        self.body = body
        self.error = error


class FleetAdmin:
    """The supervisor's admin server; `sockets()` names each live worker's socket and
    `counts()` gives (workers running, restarts so far)."""

    def __init__(
        self,
        settings: Settings,
        sockets: Callable[[], Sequence[tuple[int, str]]],
        counts: Callable[[], tuple[int, int]],
    ) -> None:
        self.bind_host = settings.admin.bind_host
        self.requested_port = settings.admin.port
        self.topology = settings.admin.topology
        self.timeout = settings.admin.request_timeout_seconds
        # A switchover answers once its fence is over and the target has answered.
        self.switchover_seconds = float(settings.switchover.fence_seconds) + 60.0
        self.sockets = sockets
        self.counts = counts
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def ask(
        self, path: str, method: str = "GET", seconds: float | None = None
    ) -> list[WorkerAnswer]:
        """Every live worker's answer to `path`, in worker order."""

        async def one(index: int, socket_path: str) -> WorkerAnswer:
            try:
                connector = aiohttp.UnixConnector(path=socket_path)
                timeout = aiohttp.ClientTimeout(total=seconds or self.timeout)
                async with (
                    aiohttp.ClientSession(connector=connector, timeout=timeout) as session,
                    session.request(method, f"http://worker{path}") as response,
                ):
                    return WorkerAnswer(index, response.status, await response.read())
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                return WorkerAnswer(index, 0, b"", str(exc) or type(exc).__name__)

        return list(await asyncio.gather(*(one(i, p) for i, p in self.sockets())))

    def _own(self) -> list[Metric]:
        running, restarts = self.counts()
        workers = GaugeMetricFamily(WORKERS.name, WORKERS.help)
        workers.add_metric([], running)
        restarted = CounterMetricFamily(
            WORKER_RESTARTS.name.removesuffix("_total"), WORKER_RESTARTS.help
        )
        restarted.add_metric([], restarts)
        return [workers, restarted]

    def app(self) -> web.Application:
        async def metrics(request: web.Request) -> web.Response:
            answers = await self.ask("/metrics")
            texts = [a.body.decode() for a in answers if a.status == 200]
            registry = CollectorRegistry(auto_describe=False)
            registry.register(MergedScrape(merge_expositions(texts), self._own()))
            encode, content_type = choose_encoder(request.headers.get("Accept") or "")
            response = web.Response(body=encode(registry))
            response.headers["Content-Type"] = content_type
            return response

        async def healthz(request: web.Request) -> web.Response:
            return web.Response(text="ok\n")

        async def readyz(request: web.Request) -> web.Response:
            answers = await self.ask("/readyz")
            if not answers:
                return json_response({"ready": False, "reason": "no worker is running"}, 503)
            for answer in answers:
                if answer.status != 200:
                    reason = answer.error or _reason(answer.body)
                    return json_response(
                        {"ready": False, "reason": f"worker {answer.index}: {reason}"}, 503
                    )
            return json_response({"ready": True, "reason": "ready", "workers": len(answers)})

        async def topology(request: web.Request) -> web.Response:
            if self.topology == "loopback" and not is_loopback(request.remote):
                return json_response(
                    {"error": "/topology is served to loopback clients only (admin.topology)"},
                    403,
                )
            for answer in await self.ask(request.path_qs):
                if answer.status == 200:
                    return web.Response(body=answer.body, content_type="application/json")
            return json_response({"error": "no worker answered"}, 503)

        async def switchover(request: web.Request) -> web.Response:
            if not is_loopback(request.remote):
                return json_response(
                    {"error": "/switchover is served to loopback clients only"}, 403
                )
            answers = await self.ask(request.path_qs, "POST", self.switchover_seconds)
            if not answers:
                return json_response({"error": "no worker is running"}, 503)
            return switchover_answer(answers)

        app = web.Application()
        app.router.add_post("/switchover", switchover)
        app.router.add_get("/metrics", metrics)
        app.router.add_get("/healthz", healthz)
        app.router.add_get("/readyz", readyz)
        if self.topology:
            app.router.add_get("/topology", topology)
        return app

    async def start(self) -> None:
        runner = await serve_app(self.app(), self.timeout, self.bind_host, self.requested_port)
        self._runner = runner
        self.port = bound_port(runner)
        address = format_host_port(self.bind_host, self.port)
        log.info("admin server on http://%s/ for every worker", address)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()


def switchover_answer(answers: Sequence[WorkerAnswer]) -> web.Response:
    """Every worker switched: 200 with each one's summary; else the first refusal's
    status (502 for a worker that did not answer), each worker's answer beside it."""
    workers: list[Any] = []
    status = 200
    for answer in answers:
        try:
            body: Any = json.loads(answer.body) if answer.status else {"error": answer.error}
        except ValueError:
            body = {"error": answer.body.decode(errors="replace")}
        workers.append({"worker": answer.index, **body})
        if status == 200 and answer.status != 200:
            status = answer.status or 502
    return json_response({"workers": workers}, status)


def _reason(body: bytes) -> str:
    try:
        reason: Any = json.loads(body).get("reason")
    except (ValueError, AttributeError):
        reason = None
    return str(reason) if reason else "not ready"
