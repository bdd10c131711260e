"""One run of one workload over one path: what the harness records for it.

The client runs alone inside the meters (the proxy's and the broker's CPU from /proc,
the host's steal).
"""

from __future__ import annotations

import os
import time
import traceback
from typing import TYPE_CHECKING, Any

from bench.catalog import Workload
from bench.generate import generate, one_line
from bench.proxy_meter import BrokerMeter, ProxyMeter
from bench.steal import StealMeter
from bench.upstreams import Upstream

if TYPE_CHECKING:
    from bench.options import Options

# Workload kinds that read a topic filled before the round (the others write their own).
CONSUMING = ("consume",)


def measure_run(
    opts: Options,
    wl: Workload,
    up: Upstream,
    path: str,
    proxy: Any,
    r: int,
    topic: str,
    created: list[str],
) -> dict[str, Any]:
    """One client run of ``wl`` over ``path`` in round ``r``, and its record: the
    client's figures, the proxy's and the broker's CPU over it, the steal around it,
    or the error that ended it."""
    record: dict[str, Any] = {"round": r, "path": path, "ok": False}
    side = up.side(path)
    bootstrap = up.direct_bootstrap() if path == "direct" else proxy.bootstrap
    pid: int | None = proxy.pid if proxy is not None else None
    t0 = time.monotonic()
    try:
        if pid is not None and not os.path.exists(f"/proc/{pid}"):
            raise RuntimeError(f"{path} is no longer running")
        if wl.kind not in CONSUMING:
            partitions = int(wl.params.get("partitions", 1))
            up.create_topic(topic, partitions, side)
            created.append(topic)
        meter = ProxyMeter(proxy)
        steal, broker = StealMeter(), BrokerMeter(up.broker_pid(side))
        result = generate(wl, bootstrap, topic, pid, opts.run_timeout)
        record["steal"] = steal.share()
        broker_rec = broker.record(result.get("messages"))
        if broker_rec is not None:
            record["broker"] = broker_rec
        proxy_rec, kproxy_rec = meter.records(float(result.get("bytes") or 0))
        if proxy_rec is not None:
            record["proxy"] = proxy_rec
            if wl.kind == "connections":
                rss0 = meter.rss0_kb / 1024
                result["rss_idle_mb"] = round(result.pop("_rss_idle_kb") / 1024, 1)
                result["rss_delta_mb"] = round(result["rss_idle_mb"] - rss0, 1)
                result["rss_before_mb"] = round(rss0, 1)
        else:
            result.pop("_rss_idle_kb", None)
        if kproxy_rec is not None:
            record["kproxy"] = kproxy_rec
        record["result"] = result
        record["ok"] = True
    except Exception as exc:
        record["error"] = one_line(exc)
        if os.environ.get("KPROXY_BENCH_DEBUG"):
            traceback.print_exc()
    record["wall_seconds"] = round(time.monotonic() - t0, 2)
    return record
