"""The benchmark harness: every workload over every path, interleaved and repeated.

``python -m bench run`` (see bench/README.md). For each upstream (Tansu, Apache Kafka)
it starts the cluster and every proxy in front of it, then
runs each workload round by round, every path once per round, direct first and the
others forward and backward in turn (A B C D, A D C B, ...: ``bench.stats.round_order``).
A peer that cannot be installed or started is recorded as
unavailable with the reason; a run that fails is recorded with its error. Results are
written to a JSON file after every workload (``bench/report.py`` renders them).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.builds import compiled_copy
from bench.catalog import UPSTREAM_ORDER, UPSTREAM_TITLES, Workload, workloads
from bench.clients import WARMUP
from bench.generate import generate, one_line
from bench.kafka_upstream import KafkaUpstream
from bench.machine import machine_info, raise_fd_limit, software_versions
from bench.one_run import CONSUMING, measure_run
from bench.options import Options
from bench.peers import Unavailable
from bench.results_file import COMPILED_PATHS
from bench.stats import ORDER, round_order
from bench.tansu_upstream import TansuUpstream
from bench.upstreams import (
    ALL_PATHS,
    FORWARDING_PATHS,
    MAIN,
    PATH_DESCRIPTIONS,
    ProxyProcess,
    Upstream,
    filled_topics,
    prefill,
)

# Workload kinds that write to the broker what the next path would find there.
WRITING = ("produce", "rate", "connections")


class Harness:
    def __init__(self, opts: Options) -> None:
        self.opts = opts
        # A work directory of the harness's own is removed when the run ends: the
        # brokers' data of a full run is gigabytes. One the caller named is kept.
        self.own_workdir = opts.workdir is None
        self.workdir = opts.workdir or Path(tempfile.mkdtemp(prefix="kproxy-bench-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        selected = set(opts.workloads) if opts.workloads else None
        self.workloads = [w for w in workloads(opts.quick, opts.scale)
                          if selected is None or w.name in selected]  # fmt: skip
        self.paths = [p for p in ALL_PATHS if p in opts.paths]
        self.started = time.time()
        self.total_runs = len(self.workloads) * len(self.paths) * opts.rounds
        self.done_runs = 0
        self.results: dict[str, Any] = {
            "meta": {
                "mode": "quick" if opts.quick else "full",
                "rounds": opts.rounds,
                "scale": opts.scale,
                "order": ORDER,
                "fresh_kproxy": True,
                "argv": sys.argv[1:],
                "started": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(self.started)),
                "workdir": str(self.workdir),
            },
            "machine": machine_info(),
            "versions": {},
            "paths": {p: {"description": PATH_DESCRIPTIONS[p], "status": {}} for p in self.paths},
            "upstreams": {},
            "workloads": {},
        }

    # -- bookkeeping -------------------------------------------------------------------
    def save(self) -> None:
        meta = self.results["meta"]
        meta["wall_seconds"] = round(time.time() - self.started, 1)
        path = self.opts.out_json
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.results, indent=1, sort_keys=False) + "\n")
        tmp.replace(path)

    def log(self, text: str) -> None:
        elapsed = time.time() - self.started
        sys.stdout.write(f"[{elapsed / 60:5.1f} min] {text}\n")
        sys.stdout.flush()

    # -- the whole run -----------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        raise_fd_limit()
        self.log(f"work directory {self.workdir}; {self.total_runs} runs planned")
        self.results["versions"] = software_versions()
        for wl in self.workloads:
            self.results["workloads"][wl.name] = {
                "title": wl.title,
                "upstream": wl.upstream,
                "kind": wl.kind,
                "generator": wl.generator,
                "params": wl.params,
                "target": wl.target,
                "metrics": [asdict(m) for m in wl.metrics],
                "runs": [],
            }
        try:
            for name in UPSTREAM_ORDER:
                group = [w for w in self.workloads if w.upstream == name]
                if group:
                    self.run_upstream(name, group)
        finally:
            if self.own_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
                self.log(f"removed {self.workdir} (--workdir DIR keeps the peers' logs)")
            # An interrupted run's partial results say when it stopped, too.
            self.results["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
            self.results["machine"]["load_average_end"] = list(os.getloadavg())
        self.save()
        return self.results

    def _make_upstream(self, name: str) -> Upstream:
        wd = self.workdir / name
        up: Upstream = TansuUpstream(wd) if name == "tansu" else KafkaUpstream(wd)
        up.baseline_source = self.opts.baseline_source
        up.baseline_loop = self.opts.baseline_loop
        up.kproxy_config = self.opts.kproxy_config
        up.compiled_source = self.compiled_source
        return up

    @functools.cached_property
    def compiled_source(self) -> Path | None:
        """This checkout built with mypyc in the work directory, once, when the run
        measures a compiled path (None when it does not, or the build fails: the paths
        are then reported unavailable)."""
        if not COMPILED_PATHS.keys() & set(self.paths):
            return None
        where = self.workdir / "compiled-source"
        where.mkdir(exist_ok=True)
        self.log("building kproxy with mypyc for the compiled paths")
        try:
            return compiled_copy(where)
        except (OSError, subprocess.CalledProcessError) as exc:
            self.log(f"the compiled paths: the mypyc build failed: {one_line(exc)}")
            return None

    def _set_status(self, path: str, upstream: str, status: str) -> None:
        self.results["paths"][path]["status"][upstream] = status

    def run_upstream(self, name: str, group: list[Workload]) -> None:
        up = self._make_upstream(name)
        t0 = time.monotonic()
        self.log(f"starting {UPSTREAM_TITLES[name]}")
        info: dict[str, Any] = {"title": UPSTREAM_TITLES[name]}
        self.results["upstreams"][name] = info
        try:
            up.start()
        except Exception as exc:
            reason = f"{UPSTREAM_TITLES[name]} did not start: {exc}"
            self.log(reason)
            info["error"] = reason
            for p in self.paths:
                self._set_status(p, name, reason)
            self._fail_all(group, reason)
            with contextlib.suppress(Exception):
                up.stop()
            return
        info["start_seconds"] = round(time.monotonic() - t0, 1)
        info["warm_up"] = up.warms_up  # one untimed direct run before each first round
        proxies: dict[str, ProxyProcess | None] = {}
        try:
            for path in self.paths:
                status = "ok"
                try:
                    if path == "direct":
                        proxies[path] = None
                    elif path in FORWARDING_PATHS:
                        proxies[path] = up.forwarder(path)
                    else:
                        proxies[path] = up.start_proxy(path)
                except Unavailable as exc:
                    status = f"unavailable: {exc}"
                except Exception as exc:
                    status = f"did not start: {one_line(exc)}"
                self._set_status(path, name, status)
                self.log(f"{name}: {path}: {status}")
            for wl in group:
                self.run_workload(wl, up, proxies)
                self.save()
        finally:
            for proxy in proxies.values():
                if proxy is not None and proxy is not up.haproxy:
                    with contextlib.suppress(Exception):
                        proxy.stop()
            with contextlib.suppress(Exception):
                up.stop()

    def _fail_all(self, group: list[Workload], reason: str) -> None:
        for wl in group:
            runs = self.results["workloads"][wl.name]["runs"]
            for r in range(self.opts.rounds):
                for p in self.paths:
                    runs.append({"round": r, "path": p, "ok": False, "error": reason})
                    self.done_runs += 1

    def _restart_proxies(self, up: Upstream, proxies: dict[str, Any], paths: Iterable[str]) -> None:
        """Give the proxies of `paths` a fresh process each.

        Before the idle connections every proxy the harness started starts afresh: memory
        a long-lived process freed in an earlier round stays resident and would hide what
        the connections add.
        """
        for path in paths:
            old = proxies.get(path)
            if old is None:
                continue
            with contextlib.suppress(Exception):
                old.stop()
            try:
                proxies[path] = up.start_proxy(path)
            except Exception as exc:
                proxies[path] = None
                self._set_status(path, up.name, f"did not restart: {one_line(exc)}")

    # -- one workload ------------------------------------------------------------------
    def run_workload(self, wl: Workload, up: Upstream, proxies: dict[str, Any]) -> None:
        runs: list[dict[str, Any]] = self.results["workloads"][wl.name]["runs"]
        persistent = up.name != "tansu"
        shared_topic = f"{wl.name}-data"
        for r in range(self.opts.rounds):
            try:
                if up.name == "tansu":
                    up.reset()  # in-memory data does not pile up
                if wl.kind == "connections":
                    # haproxy belongs to the upstream (and pools what it frees anyway)
                    fresh = [p for p in proxies if p not in ("direct", *FORWARDING_PATHS)]
                    self._restart_proxies(up, proxies, fresh)
                else:
                    # A fresh kproxy process every round: one process kept for all rounds
                    # carries its own luck into each (where ASLR put it, its hash seed's
                    # dict layouts), a few percent of CPU per message that reads as a
                    # difference between two builds (docs/performance.md, "Method").
                    kproxies = [p for p in proxies if p.startswith("kproxy-")]
                    self._restart_proxies(up, proxies, kproxies)
                if wl.kind in CONSUMING and (r == 0 or not persistent):
                    self.fill(wl, up, shared_topic)
                if r == 0 and up.warms_up:
                    self._warm_up(wl, up, shared_topic)
            except Exception as exc:
                reason = f"round setup failed: {one_line(exc)}"
                self.log(f"{wl.name} r{r}: {reason}")
                for p in self.paths:
                    runs.append({"round": r, "path": p, "ok": False, "error": reason})
                    self.done_runs += 1
                continue
            direct_primary: float | None = None
            written = False  # whether a path of this round wrote to the broker already
            for path in round_order(self.paths, r):
                status = self.results["paths"][path]["status"].get(up.name, "ok")
                if status != "ok":
                    runs.append({"round": r, "path": path, "ok": False, "skipped": True,
                                 "error": status})  # fmt: skip
                    self.done_runs += 1
                    continue
                topic = shared_topic
                if wl.kind not in CONSUMING:
                    topic = f"{wl.name}-r{r}-{path}"
                if up.name == "tansu" and wl.kind in WRITING and written:
                    # Tansu keeps what was produced in memory and slows as it grows: every
                    # path writes to a broker as empty as the first path's was.
                    try:
                        up.reset()
                    except Exception as exc:
                        reason = f"broker reset failed: {one_line(exc)}"
                        runs.append({"round": r, "path": path, "ok": False, "error": reason})
                        self.done_runs += 1
                        continue
                written = True
                created: list[str] = []
                record = measure_run(self.opts, wl, up, path, proxies.get(path), r, topic, created)
                runs.append(record)
                if persistent:
                    # Apache Kafka holds what a path wrote in the page cache, dirty, until
                    # it is written back: a path that wrote behind direct's gigabytes paid
                    # several microseconds a message more in the kernel's copy of its
                    # appends (bench/README.md, "Upstreams"). Each path writes to a
                    # broker as empty as direct's was.
                    with contextlib.suppress(Exception):
                        up.drop_topics(created)
                self.done_runs += 1
                primary = wl.metrics[0]
                value = record.get("result", {}).get(primary.key) if record["ok"] else None
                if path == "direct":
                    direct_primary = value
                ratio = ""
                if value is not None and direct_primary and path != "direct":
                    ratio = f" ({value / direct_primary:.2f} of direct)"
                shown = f"{value:,.2f} {primary.unit}" if value is not None else record["error"]
                self.log(f"{self.done_runs}/{self.total_runs} {wl.name} r{r} {path}: "
                         f"{shown}{ratio}")  # fmt: skip

    def fill(self, wl: Workload, up: Upstream, topic: str) -> None:
        """Fill the topic a consuming workload reads on every side of the upstream (one
        broker behind every side of Apache Kafka): its count and the client's warm-up."""
        for side in up.sides():
            for name in filled_topics(topic, side, self.opts.tenant_prefix):
                up.create_topic(name, 1, side)
                prefill(up.fill_bootstrap(side), name, wl.params["count"] + WARMUP,
                        wl.params["size"], client_config=wl.params.get("fill_config"))  # fmt: skip
            if up.name != "tansu":
                break

    def _warm_up(self, wl: Workload, up: Upstream, shared_topic: str) -> None:
        """One untimed run of ``wl`` on the direct path, before its first round (see
        `Upstream.warms_up`); a consumer reads the round's topic, a producer a topic of
        its own, dropped after."""
        consuming = wl.kind in CONSUMING
        topic = shared_topic if consuming else f"{wl.name}-warm-up"
        if not consuming:
            up.create_topic(topic, int(wl.params.get("partitions", 1)), MAIN)
        t0 = time.monotonic()
        try:
            generate(wl, up.direct_bootstrap(), topic, None, self.opts.run_timeout)
        finally:
            if not consuming:
                up.drop_topics([topic])
        self.log(f"{wl.name}: warm-up run on direct, untimed ({time.monotonic() - t0:.1f} s)")
