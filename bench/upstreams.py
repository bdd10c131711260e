"""The clusters a benchmark run sends its load to, and the paths in front of them.

Two upstreams, each started by the harness on loopback (docs/peers.md):

``tansu``  the Tansu broker (Rust, in-memory storage): data-path throughput and latency.
``kafka``  a one-node Apache Kafka KRaft cluster from Maven Central: the real broker.

A TCP proxy such as haproxy does not parse Kafka, so it cannot rewrite the addresses
brokers advertise: a client that bootstraps through it would be told the broker's own
address and go around it. Each upstream therefore has a second *side* for haproxy whose
brokers advertise haproxy's ports (a second Tansu broker, an extra Kafka listener).
Every other path sits in front of the main side and rewrites addresses itself, or in
paired rounds on Tansu in front of a broker of its own (`Upstream.own_broker_paths`,
bench.paired).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Protocol

from bench.generate import generator
from bench.kproxy_peer import KproxyPeer
from bench.kroxylicious_peer import KroxyliciousPeer
from bench.peers import HaproxyPeer, Unavailable
from bench.results_file import COMPILED_PATHS, KPROXY_PATHS

#: kproxy with runtime.workers: 2 (a path only when named: the sizing figures).
WORKERS_PATH = "kproxy-2-workers"
#: Every path, in run order within a round.
ALL_PATHS = (
    "direct",
    "haproxy",
    "kroxylicious",
    "kproxy-uvloop",
    "kproxy-asyncio",
    "kproxy-compiled",
    "kproxy-compiled-asyncio",
    WORKERS_PATH,
    "kproxy-base",
)
#: What `bench run` measures unless told otherwise (kproxy-base needs `bench ab --baseline`;
#: kproxy-2-workers is asked for by name, for the sizing figures).
DEFAULT_PATHS = tuple(p for p in ALL_PATHS if p not in ("kproxy-base", WORKERS_PATH))

PATH_DESCRIPTIONS = {
    "direct": "client to broker, nothing in between",
    "haproxy": "haproxy, TCP mode (no parsing: the floor)",
    "kroxylicious": "Kroxylicious (Java), pass-through configuration",
    "kproxy-uvloop": "kproxy on uvloop",
    "kproxy-asyncio": "kproxy on the standard asyncio loop",
    "kproxy-compiled": "kproxy on uvloop, its hot path built with mypyc (the container image)",
    "kproxy-compiled-asyncio": "kproxy on the standard asyncio loop, its hot path built with mypyc",
    WORKERS_PATH: "kproxy on uvloop, runtime.workers: 2 (CPU and memory: all three processes)",
    "kproxy-base": "kproxy at the baseline revision (bench ab --baseline), on uvloop "
    "unless bench ab --standard-loop",
}

MAIN = "main"
HAPROXY_SIDE = "haproxy"


def filled_topics(topic: str, side: str, tenant_prefix: str) -> list[str]:
    """The topics a consuming workload fills on `side`: its own, and on a broker behind
    this tree's kproxy (the main one, or on Tansu its own), the same under the prefix
    of a tenant (bench ab --tenancy)."""
    tree_kproxy = side.startswith("kproxy-") and side != "kproxy-base"
    if tenant_prefix and (side == MAIN or tree_kproxy):
        return [topic, tenant_prefix + topic]
    return [topic]


#: The paths that forward without parsing: each needs a side whose brokers advertise it.
FORWARDING_PATHS = (HAPROXY_SIDE,)


def side_of(path: str) -> str:
    return path if path in FORWARDING_PATHS else MAIN


class ProxyProcess(Protocol):
    """What the harness needs of a proxy in the path."""

    @property
    def bootstrap(self) -> str: ...

    @property
    def pid(self) -> int | None: ...

    def stop(self) -> None: ...


def prefill(
    bootstrap: str,
    topic: str,
    count: int,
    size: int,
    timeout: float = 600,
    client_config: dict[str, Any] | None = None,
) -> None:
    """Write ``count`` messages of ``size`` bytes to ``topic`` (partition 0), not timed,
    by a producer with these further librdkafka settings."""
    generator("produce", bootstrap, topic, timeout, size=size, count=count, warmup=0,
              client_config=json.dumps(client_config or {}))  # fmt: skip


class Upstream:
    """Base: one cluster (two sides), the addresses paths use, topics."""

    name = ""
    #: Node ids clients will see (Kroxylicious needs them up front).
    node_ids: list[int] = []
    #: Whether each workload first runs once untimed on the direct path (the harness's
    #: warm-up): for a broker whose first run of a workload is slower than the rest.
    warms_up = False

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.haproxy: HaproxyPeer | None = None
        self.haproxy_error: str | None = None
        #: A checkout of the baseline revision, for the kproxy-base path.
        self.baseline_source: Path | None = None
        #: The loop the kproxy-base path runs on ("uvloop" or "asyncio").
        self.baseline_loop = "uvloop"
        #: Sections added to this checkout's kproxy configurations (Options.kproxy_config).
        self.kproxy_config: dict[str, Any] = {}
        #: This checkout's mypyc build (bench.builds.compiled_copy), for the compiled paths.
        self.compiled_source: Path | None = None
        #: Proxy paths given a broker of their own (set before start(); Tansu only):
        #: bench.paired, where every path's broker must fill as fast as every other's.
        self.own_broker_paths: tuple[str, ...] = ()

    def side(self, path: str) -> str:
        """The side ``path`` reaches: its own when a forwarder's, else the main side."""
        return side_of(path)

    # -- addresses ---------------------------------------------------------------------
    def direct_bootstrap(self) -> str:
        """Where the direct path's clients bootstrap (the main side)."""
        raise NotImplementedError

    def proxy_target(self) -> str:
        """What a proxy in front of the main side dials (comma-separated brokers)."""
        return self.direct_bootstrap()

    def proxy_target_of(self, path: str) -> str:
        """What the proxy of ``path`` dials: the main side's brokers."""
        return self.proxy_target()

    def fill_bootstrap(self, side: str) -> str:
        """Where an untimed writer reaches ``side``."""
        if side in FORWARDING_PATHS:
            return self.forwarder(side).bootstrap
        return self.direct_bootstrap()

    def forwarder(self, path: str) -> HaproxyPeer:
        """The running forwarder of ``path`` (haproxy), or Unavailable."""
        if self.haproxy is None:
            raise Unavailable(self.haproxy_error or f"{path} is not running")
        return self.haproxy

    def broker_pid(self, side: str) -> int | None:
        """The process of the broker behind ``side``, whose CPU a run reads from /proc."""
        return None

    def sides(self) -> list[str]:
        return [MAIN] + ([HAPROXY_SIDE] if self.haproxy is not None else [])

    def stop_forwarders(self) -> None:
        if self.haproxy is not None:
            with contextlib.suppress(Exception):
                self.haproxy.stop()

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        """Between rounds: give the next round the same starting state."""

    def stop(self) -> None:
        raise NotImplementedError

    # -- topics ------------------------------------------------------------------------
    def create_topic(self, topic: str, partitions: int, side: str) -> None:
        raise NotImplementedError

    def drop_topics(self, topics: list[str]) -> None:
        """Free what a run wrote (where restarting the broker is not the way)."""

    # -- proxies -----------------------------------------------------------------------
    def start_proxy(self, path: str) -> ProxyProcess:
        """Start the proxy of ``path`` in front of its side (not direct/haproxy)."""
        wd = self.workdir / path
        target = self.proxy_target_of(path)
        if path in (*KPROXY_PATHS, "kproxy-base", WORKERS_PATH):
            servers = target.split(",")
            if path == "kproxy-base":
                if self.baseline_source is None:
                    raise Unavailable("no baseline revision (python -m bench ab --baseline REV)")
                return KproxyPeer(
                    path, self.baseline_loop, servers, wd, source=self.baseline_source
                ).start()
            if path in COMPILED_PATHS:
                if self.compiled_source is None:
                    raise Unavailable("the mypyc build was not made (a C compiler and mypy)")
                loop = COMPILED_PATHS[path]
                peer = KproxyPeer(path, loop, servers, wd, source=self.compiled_source)
            elif path == WORKERS_PATH:
                peer = KproxyPeer(path, "uvloop", servers, wd)
                peer.serve_with_workers(2, self.node_ids)
            else:
                peer = KproxyPeer(path, path.split("-", 1)[1], servers, wd)
            for section, values in self.kproxy_config.items():
                peer.config.setdefault(section, {}).update(values)
            return peer.start()
        if path == "kroxylicious":
            return KroxyliciousPeer(path, target, self.node_ids, wd).start()
        raise ValueError(f"no proxy for path {path!r}")
