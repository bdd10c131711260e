"""Rounds in which the paths take turns (``python -m bench ab WORKLOAD --paired N``).

`bench.harness.Harness` measures the paths of a round one after another, seconds each;
between one path and the next the machine's neighbours change its speed, and a round's
ratio to direct swings by more than the targets are wide. A paired round starts every
path (as a round of `bench.harness` does, fresh kproxy processes included), then runs one
client process that holds a client per path and gives them N turns each, the order
changed at every turn (`bench.turns.turn_order`): a slow spell then falls on
all paths alike. Each path's figures are read from its share of the turns, its proxy's CPU from
/proc over the whole round (a proxy does nothing while another path has the turn), and
the round is recorded in the shape `bench.harness` records it, so that the summary, the
targets read it unchanged.

Only workloads whose paths can share a round without skewing one another: the latency
workloads (a few MB written), the confluent-kafka consume workloads (each path's
consumer reads a topic filled before the round), and the confluent-kafka produce
workloads. On Apache Kafka one broker behind every path keeps what it is sent on disk.
A Tansu broker keeps it in memory and slows as it fills, so on Tansu every proxy path
has a broker of its own (`Upstream.own_broker_paths`), as direct and haproxy have: each
broker then holds what its own path sent, and all fill at the same pace.
"""

from __future__ import annotations

import json
import time
from typing import Any

from bench.catalog import Workload
from bench.generate import one_line, run_generator
from bench.harness import Harness
from bench.options import Options
from bench.proxy_meter import ProxyMeter
from bench.steal import StealMeter
from bench.upstreams import FORWARDING_PATHS, Upstream

#: ``--paired`` without a number: each kind's turns a path a round. Latency round trips
#: are cheap to switch between and their median held within +-0.01 of direct's at 200
#: turns; a consumer's turn waits ~0.5 s for its first batch, so it takes few long ones.
AUTO = -1
TURNS_BY_KIND = {"latency": 200, "produce": 20, "consume": 10}


def pairable(wl: Workload) -> str | None:
    """None when `wl` can run paired, else why not."""
    if wl.kind in TURNS_BY_KIND:
        return None
    return f"{wl.name}: paired rounds run latency, produce and consume workloads only"


class PairedHarness(Harness):
    """`Harness` with every round's paths taking turns in one client process."""

    def __init__(self, opts: Options, segments: int = AUTO) -> None:
        super().__init__(opts)
        self.segments = segments
        self.results["meta"]["paired_segments"] = (
            segments if segments != AUTO else dict(TURNS_BY_KIND)
        )

    def _make_upstream(self, name: str) -> Upstream:
        up = super()._make_upstream(name)
        if name == "tansu":  # each proxy path's broker fills with its own path's writes
            up.own_broker_paths = tuple(
                p for p in self.paths if p != "direct" and p not in FORWARDING_PATHS
            )
        return up

    def turns(self, wl: Workload) -> int:
        """Each path's turns in a round of `wl`: as asked, or its kind's default."""
        return self.segments if self.segments != AUTO else TURNS_BY_KIND[wl.kind]

    def run_workload(self, wl: Workload, up: Upstream, proxies: dict[str, Any]) -> None:
        if pairable(wl) is not None:  # one path after another, as bench.harness does
            super().run_workload(wl, up, proxies)
            return
        runs: list[dict[str, Any]] = self.results["workloads"][wl.name]["runs"]
        for r in range(self.opts.rounds):
            t0 = time.monotonic()
            try:
                records = self._paired_round(wl, up, proxies, r)
            except Exception as exc:
                reason = one_line(exc)
                self.log(f"{wl.name} r{r}: {reason}")
                records = [{"round": r, "path": p, "ok": False, "error": reason}
                           for p in self.paths]  # fmt: skip
            for record in records:
                record["wall_seconds"] = round(time.monotonic() - t0, 2)
            runs.extend(records)
            self.done_runs += len(records)
            # The figure the targets judge: the p99 of a latency workload.
            key = "p99_ms" if wl.kind == "latency" else wl.metrics[0].key
            primary = next(m for m in wl.metrics if m.key == key)
            shown = {rec["path"]: rec.get("result", {}).get(primary.key) for rec in records}
            direct = shown.get("direct")
            parts = []
            for path, value in shown.items():
                ratio = f" ({value / direct:.2f})" if value and direct and path != "direct" else ""
                parts.append(f"{path} {value:,.2f}{ratio}" if value is not None else f"{path} -")
            self.log(f"{wl.name} r{r} {primary.label} ({primary.unit}): " + ", ".join(parts))

    def _paired_round(
        self, wl: Workload, up: Upstream, proxies: dict[str, Any], r: int
    ) -> list[dict[str, Any]]:
        if up.name == "tansu":
            up.reset()
        self._restart_proxies(up, proxies, [p for p in proxies if p.startswith("kproxy-")])
        shared_topic = f"{wl.name}-data"
        if wl.kind == "consume" and (r == 0 or up.name == "tansu"):
            self.fill(wl, up, shared_topic)
        records: list[dict[str, Any]] = []
        targets: list[list[str]] = []
        for path in self.paths:
            status = self.results["paths"][path]["status"].get(up.name, "ok")
            proxy = proxies.get(path)
            if status != "ok" or (proxy is None and path != "direct"):
                records.append({"round": r, "path": path, "ok": False, "skipped": True,
                                "error": status})  # fmt: skip
                continue
            topic = shared_topic if wl.kind == "consume" else f"{wl.name}-r{r}-{path}"
            if wl.kind != "consume":
                up.create_topic(topic, 1, up.side(path))
            bootstrap = up.direct_bootstrap() if proxy is None else proxy.bootstrap
            targets.append([path, bootstrap, topic])
        meters = {path: ProxyMeter(proxies.get(path)) for path, _b, _t in targets}
        steal = StealMeter()
        results = self._generate(wl, targets)
        stolen = steal.share()  # the round's, every path's turns within it
        for path, _bootstrap, _topic in targets:
            result = results[path]
            record: dict[str, Any] = {"round": r, "path": path, "ok": True, "result": result,
                                      "steal": stolen}  # fmt: skip
            proxy_rec, kproxy_rec = meters[path].records(float(result.get("bytes") or 0))
            if proxy_rec is not None:
                record["proxy"] = proxy_rec
            if kproxy_rec is not None:
                record["kproxy"] = kproxy_rec
            records.append(record)
        if up.name != "tansu" and wl.kind != "consume":
            up.drop_topics([t for _p, _b, t in targets])
        return records

    def _generate(self, wl: Workload, targets: list[list[str]]) -> dict[str, Any]:
        p = wl.params
        argv = ["--targets", json.dumps(targets), "--count", str(p["count"]),
                "--segments", str(self.turns(wl)), "--size", str(p["size"]),
                "--acks", str(p.get("acks", "all")), "--timeout", str(self.opts.run_timeout),
                "--client-config", json.dumps(p.get("client_config", {}))]  # fmt: skip
        # Every path's share of a round within the timeout a round of bench.harness gives one.
        timeout = self.opts.run_timeout * len(targets)
        return run_generator("bench.clients", wl.kind, argv, timeout, f"paired {wl.kind}")
