"""The benchmark harness: every workload over every path, interleaved and repeated.

``python -m bench run`` (see bench/README.md). For each upstream (Tansu, Apache Kafka,
librdkafka's mock cluster) it starts the cluster and every proxy in front of it, then
runs each workload round by round, every path once per round, direct first and the
others forward and backward in turn (A B C D, A D C B, ...: ``bench.stats.round_order``).
A peer that cannot be installed or started is recorded as
unavailable with the reason; a run that fails is recorded with its error. Results are
written to a JSON file after every workload, and rendered to Markdown and a plot at the
end (``bench/report.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.metadata
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import report
from bench.ab import PAIRED_HELP, SAME_PROCESSES_HELP, compiled_copy
from bench.mock_upstream import LeaderMover, MockUpstream
from bench.peers import (
    BENCH,
    KROXYLICIOUS_VERSION,
    REPO,
    Unavailable,
    grepplabs_version,
    haproxy_version,
    java_version,
    memory_kb,
    tansu_version,
)
from bench.proxy_meter import ProxyMeter
from bench.recorders import (
    Recorder,
    perf_record,
    perf_trace,
    py_spy,
    samples_by_object,
    shared_out,
    syscall_counts,
)
from bench.stats import ORDER, round_order
from bench.steal import StealMeter
from bench.upstreams import (
    ALL_PATHS,
    DEFAULT_PATHS,
    FORWARDING_PATHS,
    PATH_DESCRIPTIONS,
    KafkaUpstream,
    ProxyProcess,
    TansuUpstream,
    Upstream,
    prefill,
)

KIB = 1024
# Proxies restarted whenever the broker behind them is (see Harness._reset_broker).
RESTARTED_WITH_BROKER = ("tansu-proxy",)

# Workload kinds that write to the broker what the next path would find there.
WRITING = ("produce", "connections")


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    higher_is_better: bool


# librdkafka asks for at most this much per Fetch (its message.max.bytes must not be
# larger than fetch.max.bytes): each response stays well below the 64 KiB after which
# kproxy streams a response, so it is gathered whole and its walk decided by the scan.
SMALL_FETCHES = {"fetch.max.bytes": 8192, "max.partition.fetch.bytes": 8192,
                 "message.max.bytes": 8192}  # fmt: skip
THROUGHPUT = (
    Metric("msg_per_s", "msg/s", "msg/s", True),
    Metric("mb_per_s", "MB/s", "MB/s", True),
)
LATENCY = (
    Metric("p50_ms", "p50", "ms", False),
    Metric("p99_ms", "p99", "ms", False),
    Metric("p999_ms", "p99.9", "ms", False),
)
CHURN = (
    Metric("msg_per_s", "msg/s", "msg/s", True),
    Metric("p99_ms", "p99 delivery", "ms", False),
)
# Idle connections held while the resident memory is read: enough that the allocator's
# noise (a few MB either way) is small beside what they add (reported per 1,000).
IDLE_CONNECTIONS = 3_000
CONNECTIONS = (
    Metric("msg_per_s", "producer msg/s", "msg/s", True),
    Metric("rss_idle_mb", "RSS with idle conns", "MB", False),
    Metric("rss_delta_mb", "RSS added by idle conns", "MB", False),
)


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    upstream: str  # tansu | kafka | mock
    kind: str  # produce | consume | latency | churn | connections | perf-produce | ...
    generator: str
    params: dict[str, Any]
    metrics: tuple[Metric, ...]
    target: str = ""  # the goal this workload's figures are judged against


def workloads(quick: bool, scale: float = 1.0) -> list[Workload]:
    """Every workload, with counts sized so that a full run fits in ~35 minutes on two
    shared cores (``quick``: a few minutes)."""

    def n(full: int, fast: int) -> int:
        return max(1, int((fast if quick else full) * scale))

    cf = "confluent-kafka"
    jp = "kafka-perf-test"
    out = [
        Workload("produce-100B", "Produce 100 B messages, acks=all", "tansu", "produce", cf,
                 {"size": 100, "count": n(400_000, 60_000), "acks": "all"}, THROUGHPUT,
                 "throughput"),
        Workload("produce-1KiB", "Produce 1 KiB messages, acks=all", "tansu", "produce", cf,
                 {"size": KIB, "count": n(150_000, 25_000), "acks": "all"}, THROUGHPUT,
                 "throughput"),
        Workload("produce-64KiB", "Produce 64 KiB messages, acks=all", "tansu", "produce", cf,
                 {"size": 64 * KIB, "count": n(3_000, 600), "acks": "all"}, THROUGHPUT,
                 "throughput"),
        Workload("consume-1KiB", "Consume a pre-filled topic of 1 KiB messages from the start",
                 "tansu", "consume", cf, {"size": KIB, "count": n(150_000, 25_000)}, THROUGHPUT,
                 "throughput"),
        Workload("latency", "One 100 B produce at a time, acks=1: round-trip time", "tansu",
                 "latency", cf, {"size": 100, "count": n(5_000, 1_000), "acks": "1"}, LATENCY,
                 "latency"),
        Workload("connections",
                 f"{IDLE_CONNECTIONS:,} idle connections plus one busy producer (1 KiB, acks=all)",
                 "tansu", "connections", cf,
                 {"idle": IDLE_CONNECTIONS, "size": KIB, "count": n(100_000, 20_000),
                  "acks": "all"},
                 CONNECTIONS, "memory"),
        Workload("kafka-produce-1KiB", "Produce 1 KiB messages, acks=all (Apache Kafka)", "kafka",
                 "produce", cf, {"size": KIB, "count": n(150_000, 20_000), "acks": "all"},
                 THROUGHPUT, "throughput"),
        Workload("kafka-consume-1KiB", "Consume 1 KiB messages from the start (Apache Kafka)",
                 "kafka", "consume", cf, {"size": KIB, "count": n(400_000, 40_000)}, THROUGHPUT,
                 "throughput"),
        Workload("kafka-consume-small-fetches", "Consume 1 KiB messages in batches of 4 KiB, "
                 "at most 8 KiB per Fetch response (gathered whole, as a consumer at the end "
                 "of its partitions gets them; Apache Kafka)", "kafka", "consume", cf,
                 {"size": KIB, "count": n(40_000, 8_000), "client_config": SMALL_FETCHES,
                  "fill_config": {"batch.size": 4 * KIB}}, THROUGHPUT, "throughput"),
        Workload("kafka-perf-produce-1KiB", "kafka-producer-perf-test, 1 KiB, acks=all (Apache "
                 "Kafka)", "kafka", "perf-produce", jp,
                 {"size": KIB, "count": n(150_000, 20_000)}, THROUGHPUT, "throughput"),
        Workload("kafka-perf-consume-1KiB", "kafka-consumer-perf-test, 1 KiB (Apache Kafka)",
                 "kafka", "perf-consume", jp, {"size": KIB, "count": n(150_000, 20_000)},
                 THROUGHPUT, "throughput"),
        Workload("churn", "Produce 100 B, acks=all, while every leader moves every 200 ms "
                 "(mock cluster, 3 brokers, 3 partitions)", "mock", "churn", cf,
                 {"size": 100, "seconds": 6.0 if not quick else 2.5, "partitions": 3,
                  "interval": 0.2, "queue": 20_000}, CHURN, "latency"),
    ]  # fmt: skip
    return out


UPSTREAM_ORDER = ("tansu", "kafka", "mock")
UPSTREAM_TITLES = {
    "tansu": "Tansu broker (in-memory)",
    "kafka": "Apache Kafka (1 KRaft node)",
    "mock": "librdkafka mock cluster (3 brokers)",
}


@dataclass
class Options:
    quick: bool = False
    rounds: int = 3
    workloads: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=lambda: list(DEFAULT_PATHS))
    baseline_source: Path | None = None  # bench ab --baseline: that revision's checkout
    baseline_loop: str = "uvloop"  # the loop kproxy-base runs on (bench ab --standard-loop)
    baseline_python: str = sys.executable  # and its interpreter (bench ab --baseline-python)
    scale: float = 1.0
    out_json: Path = BENCH / "results.json"
    out_md: Path | None = BENCH / "RESULTS.md"
    out_png: Path | None = BENCH / "results.png"
    workdir: Path | None = None
    profile_dir: Path | None = None
    syscalls_dir: Path | None = None  # perf trace -s of every proxy (bench.recorders)
    native_profile_dir: Path | None = None  # perf record -g of every proxy (the same)
    run_timeout: float = 300.0
    # A fresh process for every kproxy path at the start of every round. One process kept
    # for all rounds seems to carry its own luck into each of them (where ASLR put it,
    # its hash seed's dict layouts, say): a few percent of CPU per message that stays put
    # round after round, and reads as a difference between two builds when an A/B runs
    # each in one process (bench/README.md).
    fresh_kproxy: bool = True


# ---------------------------------------------------------------------------------------
# Machine
# ---------------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu_model": None,
        "cores": os.cpu_count(),
        "memory_gb": None,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_average": list(os.getloadavg()),
    }
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Model name":
                info["cpu_model"] = value.strip()
            elif key.strip() == "CPU(s)":
                info["cores"] = int(value.strip())
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemTotal:"):
                info["memory_gb"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    return info


def software_versions() -> dict[str, str | None]:
    import confluent_kafka

    import kproxy
    from tests.peers.kafka_cluster import KAFKA_VERSION

    try:
        uv: str | None = importlib.metadata.version("uvloop")
    except importlib.metadata.PackageNotFoundError:
        uv = None
    commit = None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                             capture_output=True, text=True, timeout=10)  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=REPO, capture_output=True, text=True, timeout=10)  # fmt: skip
        if git.returncode == 0:
            commit = git.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout else "")
    return {
        "kproxy": f"{kproxy.__version__}" + (f" @ {commit}" if commit else ""),
        "uvloop": uv,
        "confluent-kafka": confluent_kafka.version()[0],
        "librdkafka": confluent_kafka.libversion()[0],
        "tansu": tansu_version(),
        "apache-kafka": KAFKA_VERSION,
        "java": java_version(),
        "haproxy": haproxy_version(),
        "kroxylicious": KROXYLICIOUS_VERSION,
        "grepplabs-kafka-proxy": grepplabs_version(),
    }


def raise_fd_limit() -> None:
    """3,000 idle connections need ~6,000 descriptors in a proxy (client and broker side)
    and 3,000 in the client and the broker; every child inherits this limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


# ---------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _generator(
    kind: str, bootstrap: str, topic: str, run_timeout: float, **opts: Any
) -> dict[str, Any]:
    argv = ["--bootstrap", bootstrap, "--topic", topic]
    for key, value in opts.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    return run_generator("bench.workloads", kind, argv, run_timeout)


def run_generator(
    module: str, kind: str, argv: list[str], timeout: float, label: str = ""
) -> dict[str, Any]:
    """``python -m module kind *argv``, in its own process: the JSON object on the last
    line it prints (errors name it `label`, by default its kind)."""
    label = label or kind
    try:
        proc = subprocess.run([sys.executable, "-m", module, kind, *argv], capture_output=True,
                              text=True, timeout=timeout, env=_env(), cwd=REPO,
                              check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{label} did not finish within {timeout:.0f} s") from None
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        raise RuntimeError(f"{label} failed: {err[-1] if err else proc.returncode}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


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
                "fresh_kproxy": opts.fresh_kproxy,
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
        self.results["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        self.results["machine"]["load_average_end"] = list(os.getloadavg())
        self.save()
        return self.results

    def _make_upstream(self, name: str) -> Upstream:
        wd = self.workdir / name
        up: Upstream
        if name == "tansu":
            up = TansuUpstream(wd)
        elif name == "kafka":
            up = KafkaUpstream(wd)
        else:
            up = MockUpstream(wd)
        up.baseline_source = self.opts.baseline_source
        up.baseline_loop = self.opts.baseline_loop
        up.baseline_python = self.opts.baseline_python
        up.compiled_source = self.compiled_source
        up.want_floor = "python-floor" in self.paths
        return up

    @functools.cached_property
    def compiled_source(self) -> Path | None:
        """This checkout built with mypyc in the work directory, once, when the run
        measures kproxy-compiled (None when it does not, or the build fails: the path is
        then reported unavailable)."""
        if "kproxy-compiled" not in self.paths:
            return None
        where = self.workdir / "compiled-source"
        where.mkdir(exist_ok=True)
        self.log("building kproxy with mypyc for kproxy-compiled")
        try:
            return compiled_copy(where)
        except (OSError, subprocess.CalledProcessError) as exc:
            self.log(f"kproxy-compiled: the mypyc build failed: {_one_line(exc)}")
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
                    status = f"did not start: {_one_line(exc)}"
                self._set_status(path, name, status)
                self.log(f"{name}: {path}: {status}")
            for wl in group:
                self.run_workload(wl, up, proxies)
                self.save()
        finally:
            for proxy in proxies.values():
                if proxy is not None and proxy not in (up.haproxy, up.floor):
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

    def _reset_broker(self, up: Upstream, proxies: dict[str, Any]) -> None:
        """A freshly started broker, and fresh processes for the proxies that do not
        survive its restart."""
        up.reset()
        self._restart_proxies(up, proxies, RESTARTED_WITH_BROKER)

    def _restart_proxies(self, up: Upstream, proxies: dict[str, Any], paths: Iterable[str]) -> None:
        """Give the proxies of `paths` a fresh process each.

        The Tansu proxy keeps one connection to its origin broker; once that broker has
        been restarted it logs "Socket not connected" every 50 ms and answers no client
        again, so it is given a fresh process with the fresh broker. Before the idle
        connections every proxy the harness started starts afresh: memory a long-lived
        process freed in an earlier round stays resident and would hide what the
        connections add.
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
                self._set_status(path, up.name, f"did not restart: {_one_line(exc)}")

    # -- one workload ------------------------------------------------------------------
    def run_workload(self, wl: Workload, up: Upstream, proxies: dict[str, Any]) -> None:
        runs: list[dict[str, Any]] = self.results["workloads"][wl.name]["runs"]
        persistent = up.name != "tansu"
        shared_topic = f"{wl.name}-data"
        for r in range(self.opts.rounds):
            created: list[str] = []
            try:
                if up.name == "tansu":
                    self._reset_broker(up, proxies)  # in-memory data does not pile up
                if wl.kind == "connections":
                    # haproxy and python-floor belong to the upstream (haproxy pools what
                    # it frees anyway)
                    fresh = [p for p in proxies if p not in ("direct", *FORWARDING_PATHS)]
                    self._restart_proxies(up, proxies, fresh)
                elif self.opts.fresh_kproxy:
                    kproxies = [p for p in proxies if p.startswith("kproxy-")]
                    self._restart_proxies(up, proxies, kproxies)
                if wl.kind in ("consume", "perf-consume") and (r == 0 or not persistent):
                    for side in up.sides():
                        up.create_topic(shared_topic, 1, side)
                        prefill(up.fill_bootstrap(side), shared_topic, wl.params["count"],
                                wl.params["size"],
                                client_config=wl.params.get("fill_config"))  # fmt: skip
                        if persistent:
                            break  # one broker behind both sides
            except Exception as exc:
                reason = f"round setup failed: {_one_line(exc)}"
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
                if wl.kind not in ("consume", "perf-consume"):
                    topic = f"{wl.name}-r{r}-{path}"
                if up.name == "tansu" and wl.kind in WRITING and written:
                    # Tansu keeps what was produced in memory and slows as it grows: every
                    # path writes to a broker as empty as the first path's was.
                    try:
                        self._reset_broker(up, proxies)
                    except Exception as exc:
                        reason = f"broker reset failed: {_one_line(exc)}"
                        runs.append({"round": r, "path": path, "ok": False, "error": reason})
                        self.done_runs += 1
                        continue
                written = True
                record = self.run_one(wl, up, path, proxies.get(path), r, topic, created)
                runs.append(record)
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
            if persistent:
                with contextlib.suppress(Exception):
                    up.drop_topics(created)

    def run_one(
        self,
        wl: Workload,
        up: Upstream,
        path: str,
        proxy: Any,
        r: int,
        topic: str,
        created: list[str],
    ) -> dict[str, Any]:
        record: dict[str, Any] = {"round": r, "path": path, "ok": False}
        side = up.side(path)
        bootstrap = up.direct_bootstrap() if path == "direct" else proxy.bootstrap
        pid: int | None = proxy.pid if proxy is not None else None
        t0 = time.monotonic()
        recorders: list[Recorder] = []
        try:
            if pid is not None and not os.path.exists(f"/proc/{pid}"):
                raise RuntimeError(f"{path} is no longer running")
            if wl.kind not in ("consume", "perf-consume"):
                partitions = int(wl.params.get("partitions", 1))
                up.create_topic(topic, partitions, side)
                created.append(topic)
            meter = ProxyMeter(proxy)
            name = f"{wl.name}-{path}-r{r}.txt"
            if self.opts.profile_dir is not None and meter.kproxy is not None and pid is not None:
                recorders.append(py_spy(pid, self.opts.profile_dir / name))
            syscalls = None
            if self.opts.syscalls_dir is not None and pid is not None:
                syscalls = perf_trace(pid, self.opts.syscalls_dir / name)
                recorders.append(syscalls)
            native = None
            if self.opts.native_profile_dir is not None and pid is not None:
                data = self.opts.native_profile_dir / name.replace(".txt", ".perf.data")
                native = perf_record(pid, data)
                recorders.append(native)
            steal = StealMeter()
            result = self.generate(wl, up, side, bootstrap, topic, pid)
            record["steal"] = steal.share()
            _stop(recorders)
            proxy_rec, kproxy_rec = meter.records(float(result.get("bytes") or 0))
            if proxy_rec is not None:
                if syscalls is not None:
                    calls = syscall_counts(syscalls.output())
                    proxy_rec["syscalls"] = sum(calls.values())
                    proxy_rec["syscalls_by_name"] = calls
                if native is not None:
                    samples = samples_by_object(native.written())
                    proxy_rec["cpu_seconds_by_object"] = shared_out(
                        proxy_rec["cpu_seconds"], samples
                    )
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
            record["error"] = _one_line(exc)
            if os.environ.get("KPROXY_BENCH_DEBUG"):
                traceback.print_exc()
        finally:
            _stop(recorders)
        record["wall_seconds"] = round(time.monotonic() - t0, 2)
        return record

    def generate(
        self, wl: Workload, up: Upstream, side: str, bootstrap: str, topic: str, pid: int | None
    ) -> dict[str, Any]:
        p = wl.params
        timeout = self.opts.run_timeout
        if wl.kind == "produce":
            return _generator("produce", bootstrap, topic, timeout, size=p["size"],
                              count=p["count"], acks=p["acks"], partition=0)  # fmt: skip
        if wl.kind == "consume":
            return _generator("consume", bootstrap, topic, timeout, count=p["count"],
                              timeout=timeout - 10,
                              client_config=json.dumps(p.get("client_config", {})))  # fmt: skip
        if wl.kind == "latency":
            return _generator("latency", bootstrap, topic, timeout, size=p["size"],
                              count=p["count"], acks=p["acks"], partition=0, warmup=50)  # fmt: skip
        if wl.kind == "churn":
            assert isinstance(up, MockUpstream)
            mc = up.cluster(side)
            mover = LeaderMover(mc.set_leader, topic, p["partitions"], up.node_ids,
                                p["interval"]).start()  # fmt: skip
            try:
                result = _generator("churn", bootstrap, topic, timeout, size=p["size"],
                                    seconds=p["seconds"], queue=p["queue"], warmup=100)  # fmt: skip
            finally:
                result_moves = mover.stop()
            result["leader_moves"] = result_moves
            if mover.errors:
                result["mover_errors"] = mover.errors
            return result
        if wl.kind == "connections":
            return self._connections(wl, bootstrap, topic, pid, timeout)
        if wl.kind == "perf-produce":
            from bench.javaperf import producer_perf

            return producer_perf(bootstrap, topic, p["count"], p["size"], timeout=timeout)
        if wl.kind == "perf-consume":
            from bench.javaperf import consumer_perf

            group = f"bench-{topic}-{time.monotonic_ns()}"
            return consumer_perf(bootstrap, topic, p["count"], p["size"], group,
                                 timeout=timeout)  # fmt: skip
        raise ValueError(f"unknown workload kind {wl.kind}")

    def _connections(
        self, wl: Workload, bootstrap: str, topic: str, pid: int | None, timeout: float
    ) -> dict[str, Any]:
        p = wl.params
        argv = [sys.executable, "-m", "bench.workloads", "idle", "--bootstrap", bootstrap,
                "--topic", topic, "--count", str(p["idle"]), "--timeout", "120"]  # fmt: skip
        holder = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=_env(),
                                  cwd=REPO)  # fmt: skip
        try:
            assert holder.stdout is not None and holder.stdin is not None
            line = _readline(holder, 150)
            ready = json.loads(line)
            if ready.get("opened") != p["idle"]:
                raise RuntimeError(f"only {ready.get('opened')} idle connections opened")
            time.sleep(1.0)  # let allocations settle before reading RSS
            rss_idle = memory_kb(pid).get("VmRSS", 0) if pid is not None else 0
            result = _generator("produce", bootstrap, topic, timeout, size=p["size"],
                                count=p["count"], acks=p["acks"], partition=0)  # fmt: skip
            # Closing its stdin (communicate does) tells the holder to report and exit.
            out, _ = holder.communicate(input="", timeout=60)
            held = json.loads(out.strip().splitlines()[-1])
            result["idle_open_seconds"] = round(float(ready["open_seconds"]), 2)
            result["idle_alive_at_end"] = held.get("alive_at_end")
            result["_rss_idle_kb"] = rss_idle
            return result
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()


def _stop(recorders: list[Recorder]) -> None:
    while recorders:
        recorders.pop().stop()


def _readline(proc: subprocess.Popen[str], timeout: float) -> str:
    """The next stdout line of ``proc`` within ``timeout`` seconds."""
    import selectors

    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"no answer from the idle-connection holder in {timeout} s")
            if sel.select(left):
                line = proc.stdout.readline()
                if not line:
                    err = proc.stderr.read() if proc.stderr is not None else ""
                    tail = err.strip().splitlines()
                    raise RuntimeError(
                        f"idle-connection holder exited: {tail[-1] if tail else proc.poll()}"
                    )
                return line
    finally:
        sel.close()


def _one_line(exc: BaseException, limit: int = 400) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:limit]


# ---------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--same-processes", action="store_true", help=SAME_PROCESSES_HELP)
    p.add_argument(
        "--quick",
        action="store_true",
        help="small counts and 2 rounds (a few minutes): proves the harness works",
    )
    p.add_argument("--rounds", type=int, default=None, help="rounds (default 3; quick: 2)")
    p.add_argument(
        "--workloads", default="", help="comma-separated workload names (default: all; see `list`)"
    )
    p.add_argument(
        "--paths",
        default=",".join(DEFAULT_PATHS),
        help="comma-separated paths (default: all); direct is always included",
    )
    p.add_argument("--scale", type=float, default=1.0, help="multiply every message count")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory for results.json, RESULTS.md and results.png "
        "(default: bench/; quick: /tmp/kproxy-bench-quick)",
    )
    p.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="peers' logs and data, kept (default: a temporary directory, removed at the end)",
    )
    p.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="record kproxy with py-spy during each of its runs (collapsed stacks)",
    )
    p.add_argument(
        "--syscalls",
        type=Path,
        default=None,
        metavar="DIR",
        help="count every proxy's syscalls with perf trace during each of its runs "
        "(its CPU figures then include the tracing's cost)",
    )
    p.add_argument(
        "--native-profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="record every proxy with perf record -g during each of its runs (kernel and "
        "native frames: the compiled build's own) and split its CPU by object",
    )
    p.add_argument("--run-timeout", type=float, default=300.0, help="seconds per run")  # fmt: skip
    p.add_argument(
        "--paired", type=int, nargs="?", const=-1, default=0, metavar="TURNS", help=PAIRED_HELP
    )


def options_from(args: argparse.Namespace) -> Options:
    known = {w.name for w in workloads(True)}
    wanted = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise SystemExit(f"unknown workload(s) {unknown}; known: {sorted(known)}")
    paths = [p for p in args.paths.split(",") if p]
    bad = [p for p in paths if p not in ALL_PATHS]
    if bad:
        raise SystemExit(f"unknown path(s) {bad}; known: {list(ALL_PATHS)}")
    if "direct" not in paths:
        paths.insert(0, "direct")  # every ratio is to direct, measured in the same run
    out = args.out or (Path(tempfile.gettempdir()) / "kproxy-bench-quick" if args.quick else BENCH)
    rounds = args.rounds or (2 if args.quick else 3)
    return Options(
        quick=args.quick,
        rounds=rounds,
        workloads=wanted,
        paths=paths,
        scale=args.scale,
        out_json=out / "results.json",
        out_md=out / "RESULTS.md",
        out_png=out / "results.png",
        workdir=args.workdir,
        profile_dir=args.profile,
        syscalls_dir=args.syscalls,
        native_profile_dir=args.native_profile,
        run_timeout=args.run_timeout,
        fresh_kproxy=not args.same_processes,
    )


def main_run(args: argparse.Namespace) -> int:
    opts = options_from(args)
    harness = Harness(opts)
    if args.paired:
        from bench.paired import PairedHarness

        harness = PairedHarness(opts, args.paired)

    def on_sigterm(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        results = harness.run()
    except KeyboardInterrupt:
        harness.results["meta"]["interrupted"] = True
        harness.save()
        print("interrupted; partial results in", opts.out_json)
        return 130
    report.write_outputs(results, opts.out_md, opts.out_png, opts.out_json)
    wall = results["meta"]["wall_seconds"]
    print(f"done in {wall / 60:.1f} min: {opts.out_json}, {opts.out_md}, {opts.out_png}")
    return 0
