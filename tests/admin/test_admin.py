"""The admin server over real loopback sockets: /metrics, /healthz, /readyz, /topology.

A scripted broker (answers encoded with kio, not with kproxy's code) stands in for the
cluster, so that readiness and the node table come from kproxy's real discovery path.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kproxy.admin.server import AdminServer, make_app, start_admin
from kproxy.app import Stop, serve
from kproxy.config.settings import Settings, parse_config
from kproxy.observe.observability import Observability
from kproxy.protocol.walker import LeaderObservation
from kproxy.runtime.proxy import Proxy
from tests.metadata_broker import Brokers, metadata_broker

DEADLINE_SECONDS = 10.0


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 60))  # type: ignore[arg-type]


async def poll(cond: Callable[[], Awaitable[bool]], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_SECONDS
    while not await cond():
        if loop.time() > deadline:
            raise AssertionError(f"not reached before the deadline: {what}")
        await asyncio.sleep(0.01)


def scripted_broker(brokers: Brokers) -> AbstractAsyncContextManager[int]:
    """A listener that answers every Metadata request with `brokers`; yields its port."""
    return metadata_broker(lambda _port: brokers)


def settings_for(tmp_path: Path, bootstrap_port: int, **extra: Any) -> Settings:
    data: dict[str, Any] = {
        "cluster": {
            "bootstrap_servers": [f"127.0.0.1:{bootstrap_port}"],
            "dial_overrides": {"broker-1.test.invalid:9092": f"127.0.0.1:{bootstrap_port}"},
            "connect_timeout_seconds": 2,
        },
        "listeners": {
            "bind_host": "127.0.0.1",
            "advertised_host": "127.0.0.1",
            "bootstrap_port": 0,
            "broker_port_base": 0,
        },
        "admin": {"bind_host": "127.0.0.1", "port": 0},
        "events": {"dir": str(tmp_path / "events")},
    }
    data.update(extra)
    return parse_config(data)


async def get(url: str, **headers: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), await resp.text()


def unused_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_endpoints_readiness_and_topology(tmp_path: Path) -> None:
    async def main() -> None:
        async with scripted_broker(
            [(1, "broker-1.test.invalid", 9092), (2, "127.0.0.1", 19092)]
        ) as broker_port:
            settings = settings_for(tmp_path, broker_port)
            observer = Observability(settings, instance="admin-test")
            admin = await start_admin(settings, observer)
            try:
                assert admin.port > 0
                base = admin.url
                assert base == f"http://127.0.0.1:{admin.port}"

                status, ctype, body = await get(f"{base}/healthz")
                assert (status, body) == (200, "ok\n")
                assert ctype.startswith("text/plain")

                # No proxy yet: not ready, and says why.
                status, ctype, body = await get(f"{base}/readyz")
                assert status == 503 and ctype.startswith("application/json")
                assert json.loads(body) == {"ready": False, "reason": "the proxy has not started"}

                ctx = Proxy(settings, observer)
                admin.attach(ctx)
                await ctx.start()
                try:

                    async def ready() -> bool:
                        return (await get(f"{base}/readyz"))[0] == 200

                    await poll(ready, "/readyz says ready once the cluster answered")
                    assert json.loads((await get(f"{base}/readyz"))[2])["ready"] is True

                    observer.leaders(
                        3,
                        "c",
                        None,
                        [
                            LeaderObservation("orders", None, 0, 0, 1, 4, False),
                            LeaderObservation("orders", None, 1, 0, 2, 4, False),
                            LeaderObservation("audit", None, 0, 0, 2, 1, False),
                        ],
                        frozenset({1, 2}),
                    )
                    observer.leaders(
                        0,
                        "p",
                        1,
                        [LeaderObservation("orders", None, 0, 6, 2, 5, True)],
                        frozenset({2}),
                    )

                    status, ctype, body = await get(f"{base}/topology")
                    assert status == 200 and ctype.startswith("application/json")
                    topo = json.loads(body)
                    assert topo["proxy"] == "admin-test"
                    assert topo["cluster_reached"] is True
                    assert topo["bootstrap"] == {
                        "kproxy": f"127.0.0.1:{ctx.bootstrap_port}",
                        "listener_state": "serving",
                        "servers": [f"127.0.0.1:{broker_port}"],
                    }
                    nodes = {n["id"]: n for n in topo["nodes"]}
                    assert set(nodes) == {1, 2}
                    n1 = nodes[1]
                    assert n1["advertised"] == "broker-1.test.invalid:9092"
                    assert n1["dial"] == f"127.0.0.1:{broker_port}"
                    assert n1["kproxy"] == f"127.0.0.1:{ctx.listeners.by_name['node-1'].port}"
                    assert n1["listener_state"] == "serving"
                    assert nodes[2]["dial"] == nodes[2]["advertised"] == "127.0.0.1:19092"
                    parts = [
                        (p["topic"], p["partition"], p["leader"], p["leader_epoch"])
                        for p in topo["partitions"]
                    ]
                    assert parts == [("audit", 0, 2, 1), ("orders", 0, 2, 5), ("orders", 1, 2, 4)]
                    changed = {
                        (p["topic"], p["partition"]): p["changed_at"] for p in topo["partitions"]
                    }
                    assert changed[("orders", 1)] is None
                    assert re.fullmatch(
                        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", changed[("orders", 0)]
                    )
                    only = json.loads((await get(f"{base}/topology?topic=audit"))[2])
                    assert [p["topic"] for p in only["partitions"]] == ["audit"]

                    status, ctype, text = await get(f"{base}/metrics")
                    assert status == 200 and ctype.startswith("text/plain")
                    assert 'kproxy_leader_changes_total{source_api="Produce"} 1.0' in text
                    assert (
                        'kproxy_redirects_total{api="Produce",from_node="1",to_node="2"} 1.0'
                        in text
                    )
                    assert "kproxy_nodes_discovered_total 2.0" in text
                    assert "kproxy_cluster_reached 1.0" in text
                    status, ctype, text = await get(
                        f"{base}/metrics", Accept="application/openmetrics-text; version=1.0.0"
                    )
                    assert status == 200 and ctype.startswith("application/openmetrics-text")
                    assert text.rstrip().endswith("# EOF")
                finally:
                    await ctx.stop(0.1)
                # Listeners closed: no longer ready.
                status, _, body = await get(f"{base}/readyz")
                assert status == 503
                assert json.loads(body)["reason"] == "the bootstrap listener is closed"
            finally:
                await admin.stop()
                observer.close()
            with pytest.raises(aiohttp.ClientConnectionError):
                await get(f"{base}/healthz")

    run(main())


def test_not_ready_until_the_cluster_is_reached(tmp_path: Path) -> None:
    async def main() -> None:
        settings = settings_for(tmp_path, unused_port())
        observer = Observability(settings)
        ctx = Proxy(settings, observer)
        admin = AdminServer(settings, observer, ctx)
        await admin.start()
        try:
            await ctx.start()
            status, _, body = await get(f"{admin.url}/readyz")
            assert status == 503
            assert json.loads(body) == {
                "ready": False,
                "reason": "the cluster has not been reached yet",
            }
            topo = json.loads((await get(f"{admin.url}/topology"))[2])
            assert topo["nodes"] == [] and topo["partitions"] == []
            assert topo["cluster_reached"] is False
        finally:
            await ctx.stop(0.1)
            await admin.stop()
            observer.close()

    run(main())


def test_topology_loopback_answers_this_host_and_refuses_others(tmp_path: Path) -> None:
    """`admin.topology: loopback`, as in Kubernetes: the kubelet's probes and Prometheus
    reach /readyz and /metrics from other addresses, /topology is only for a client in
    the pod (kubectl port-forward connects from the pod's loopback)."""
    from unittest import mock

    from aiohttp.test_utils import make_mocked_request

    async def main() -> None:
        settings = settings_for(tmp_path, unused_port(), admin={
            "bind_host": "127.0.0.1", "port": 0, "topology": "loopback"
        })  # fmt: skip
        observer = Observability(settings)
        admin = await start_admin(settings, observer)
        try:
            assert (await get(f"{admin.url}/topology"))[0] == 200
            app = make_app(observer, mock.Mock(proxy=None), settings.admin.topology)
            for remote, expected in (("10.1.2.3", 403), ("::1", 200), ("127.0.0.2", 200)):
                transport = mock.Mock()
                transport.get_extra_info.return_value = (remote, 40000)
                request = make_mocked_request("GET", "/topology", app=app, transport=transport)
                match = await app.router.resolve(request)
                response = await match.handler(request)
                assert response.status == expected, remote
                if expected == 403:
                    assert "loopback clients only" in str(response.text)
                request = make_mocked_request("GET", "/readyz", app=app, transport=transport)
                assert (await (await app.router.resolve(request)).handler(request)).status == 503
        finally:
            await admin.stop()
            observer.close()

    run(main())


def test_port_in_use_is_an_oserror(tmp_path: Path) -> None:
    async def main() -> None:
        settings = settings_for(tmp_path, unused_port())
        observer = Observability(settings)
        first = await start_admin(settings, observer)
        try:
            taken = settings_for(tmp_path, unused_port(), admin={"port": first.port})
            with pytest.raises(OSError):
                await start_admin(taken, observer)
            with pytest.raises(RuntimeError):
                _ = AdminServer(taken, observer).port
        finally:
            await first.stop()
            observer.close()

    run(main())


def test_serve_runs_the_admin_server_and_writes_out_the_event_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        async with scripted_broker([(1, "127.0.0.1", 19092)]) as broker_port:
            settings = settings_for(tmp_path, broker_port)
            stop = Stop()
            task = asyncio.create_task(serve(settings, stop))

            async def admin_logged() -> bool:
                if task.done():
                    task.result()
                return any("kproxy admin at" in r.getMessage() for r in caplog.records)

            await poll(admin_logged, "serve() logs the admin address")
            record = next(r for r in caplog.records if "kproxy admin at" in r.getMessage())
            match = re.search(r"http://(\S+)/metrics", record.getMessage())
            assert match is not None
            base = f"http://{match.group(1)}"

            async def ready() -> bool:
                return (await get(f"{base}/readyz"))[0] == 200

            await poll(ready, "serve()'s proxy is ready")
            stop.set()
            assert await task == 0
        with pytest.raises(aiohttp.ClientConnectionError):
            await get(f"{base}/healthz")
        lines = [
            json.loads(line)
            for path in sorted((tmp_path / "events").glob("*.jsonl"))
            for line in path.read_text().splitlines()
        ]
        assert {"schema": 1, "type": "node_discovered"}.items() <= lines[0].items()
        assert lines[0]["node_id"] == 1

    with caplog.at_level(logging.INFO, logger="kproxy"):
        run(main())


def test_admin_disabled_means_no_admin_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        settings = settings_for(tmp_path, unused_port(), admin={"enabled": False})
        stop = Stop()
        task = asyncio.create_task(serve(settings, stop))

        async def started() -> bool:
            return any("kproxy bootstrap at" in r.getMessage() for r in caplog.records)

        await poll(started, "serve() started")
        stop.set()
        assert await task == 0
        assert not any("kproxy admin at" in r.getMessage() for r in caplog.records)

    with caplog.at_level(logging.INFO, logger="kproxy"):
        run(main())
