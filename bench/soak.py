"""``python -m bench soak``: an hour of produce and consume through kproxy on a
three-node Apache Kafka cluster while leaders move and brokers restart.

kproxy runs with the defaults users run (`bench.kproxy_peer`). The clients
(`bench.soak_traffic`) run in a process of their own: an idempotent producer at a fixed
rate and a consumer group, both through kproxy. Every ``--chaos-every`` seconds the
harness does the next of: move one partition's leader (reassignment, then a preferred
election), restart a broker (SIGTERM, controlled shutdown), kill a broker (SIGKILL) and
start it again. Every ``--sample-every`` seconds it reads kproxy's resident memory and
open descriptors from /proc.

The record: per window (``--window``, 5 minutes) the produce and end-to-end latency
percentiles, the chaos done and kproxy's memory and descriptors; the slope of memory
and descriptors over the run after its first window (least squares, per hour); and the
ledger: every acknowledged record read, none in the log twice. Written to
``bench/soak_results.json`` and the "Soak" section of bench/RESULTS.md. A benchmark,
not a test: it asserts nothing, it reports.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.formats import replace_marked_section
from bench.kproxy_peer import KproxyPeer
from bench.machine import kproxy_revision
from bench.peers import BENCH, REPO
from bench.procfs import cpu_seconds, memory_kb, open_descriptors
from bench.soak_report import END_MARKER, MARKER, render_section, slope_per_hour
from tests.peers.kafka_cluster import KafkaCluster

RESULTS_JSON = BENCH / "soak_results.json"
RESULTS_MD = BENCH / "RESULTS.md"
TOPIC = "soak"


class KafkaChaos:
    """The disturbances, one at a time and in turn: a leader moved, a broker restarted,
    a broker killed; each broker takes its turn at being restarted and killed."""

    def __init__(self, cluster: KafkaCluster, topic: str, partitions: int) -> None:
        self.cluster = cluster
        self.topic = topic
        self.partitions = partitions
        self.done = 0
        self.kinds: list[tuple[str, Callable[[int], str]]] = [
            ("leader move", self.move_leader),
            ("broker restart", lambda i: self.restart(i, kill=False)),
            ("broker kill", lambda i: self.restart(i, kill=True)),
        ]

    def move_leader(self, turn: int) -> str:
        partition = turn % self.partitions
        replicas = self.cluster.replicas(self.topic)[partition]
        self.cluster.reassign(self.topic, partition, [*replicas[1:], replicas[0]])
        self.cluster.elect_preferred_leaders(self.topic, [partition])
        return f"{self.topic}-{partition} to node {replicas[1]}"

    def restart(self, turn: int, *, kill: bool) -> str:
        node = sorted(self.cluster.nodes)[turn % len(self.cluster.nodes)]
        self.cluster.stop_node(node, kill=kill)
        self.cluster.start_node(node, timeout=120)
        # Leadership back where it was preferred: more moves for clients to follow.
        self.cluster.elect_preferred_leaders(self.topic)
        return f"node {node}"

    def step(self) -> dict[str, Any]:
        kind, act = self.kinds[self.done % len(self.kinds)]
        turn = self.done // len(self.kinds)
        self.done += 1
        began = time.monotonic()
        try:
            what = act(turn)
            error = None
        except Exception as exc:  # a failed disturbance is reported, the soak goes on
            what, error = "", f"{type(exc).__name__}: {exc}"
        return {"kind": kind, "what": what, "seconds": time.monotonic() - began, "error": error}

    def heal(self) -> None:
        """Every node running again, for the drain at the end."""
        for node_id, node in self.cluster.nodes.items():
            if not node.running:
                self.cluster.start_node(node_id, timeout=120)


class Sampler(threading.Thread):
    def __init__(self, pid: int, every: float, started: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.every, self.started = pid, every, started
        self.samples: list[dict[str, float]] = []
        self.stopping = threading.Event()

    def take(self) -> None:
        self.samples.append(
            {
                "t": time.monotonic() - self.started,
                "rss_mb": memory_kb(self.pid).get("VmRSS", 0) / 1024,
                "fds": open_descriptors(self.pid),
                "cpu_s": cpu_seconds(self.pid),
            }
        )

    def run(self) -> None:
        while not self.stopping.wait(self.every):
            self.take()


def soak(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster = KafkaCluster(3, heap=args.heap, workdir=workdir / "kafka", log_level="warn")
    with cluster:
        cluster.create_topic(
            TOPIC, partitions=args.partitions, rf=3, config={"min.insync.replicas": "2"}
        )
        kproxy = KproxyPeer(
            "kproxy",
            "uvloop",
            cluster.external_bootstrap.split(","),
            workdir / "kproxy",
            dial_overrides=cluster.dial_overrides,
        ).start()
        try:
            assert kproxy.pid is not None
            return drive(args, cluster, kproxy.pid, kproxy.bootstrap)
        finally:
            kproxy.stop()


def drive(
    args: argparse.Namespace, cluster: KafkaCluster, pid: int, bootstrap: str
) -> dict[str, Any]:
    argv = [
        sys.executable, "-m", "bench.soak_traffic", "--bootstrap", bootstrap,
        "--topic", TOPIC, "--seconds", str(args.seconds), "--rate", str(args.rate),
        "--size", str(args.size), "--window", str(args.window),
    ]  # fmt: skip
    started = time.monotonic()
    sampler = Sampler(pid, args.sample_every, started)
    sampler.take()
    sampler.start()
    lines: list[dict[str, Any]] = []
    chaos = KafkaChaos(cluster, TOPIC, args.partitions)
    done: list[dict[str, Any]] = []
    child = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    reader = threading.Thread(
        target=lambda: lines.extend(json.loads(line) for line in child.stdout or ()), daemon=True
    )
    reader.start()
    try:
        # Quiet for the first and the last chaos period: a baseline, then the drain.
        turn = 1
        while time.monotonic() - started < args.seconds - args.chaos_every:
            due = started + turn * args.chaos_every
            if time.monotonic() < due:
                time.sleep(min(1.0, due - time.monotonic()))
                continue
            done.append({"t": time.monotonic() - started, **chaos.step()})
            turn += 1
        chaos.heal()
        child.wait(timeout=args.seconds + 600)
        reader.join(60)
    finally:
        sampler.stopping.set()
        if child.poll() is None:
            child.kill()
    sampler.join(10)
    sampler.take()
    return assemble(args, lines, sampler.samples, done)


def assemble(
    args: argparse.Namespace,
    lines: list[dict[str, Any]],
    samples: list[dict[str, float]],
    chaos: list[dict[str, Any]],
) -> dict[str, Any]:
    windows = [line for line in lines if "window" in line]
    final = next((line for line in lines if "final" in line), None)
    if final and final["tail"]["produce_ms"]["n"] and len(windows) * args.window < args.seconds:
        # A run that is not a whole number of windows: its last part is one more window
        # (acknowledgements that only arrive after the last whole window are not).
        windows.append({"window": len(windows), **final["tail"]})
    # After the first window, while the clients ran: the last sample follows their close.
    steady = [s for s in samples if args.window <= s["t"] <= args.seconds] or samples
    for w in windows:
        lo, hi = w["window"] * args.window, (w["window"] + 1) * args.window
        w["chaos"] = [c["kind"] for c in chaos if lo <= c["t"] < hi]
        at_end = [s for s in samples if s["t"] <= hi] or samples
        w["rss_mb"], w["fds"] = at_end[-1]["rss_mb"], at_end[-1]["fds"]
    return {
        "command": " ".join(["python -m bench soak", *sys.argv[2:]]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "revision": kproxy_revision(),
        "settings": dict(vars(args)),
        "cpus": os.cpu_count(),
        "windows": windows,
        "chaos": chaos,
        "samples": samples,
        "ledger": final["final"] if final else None,
        "client_errors": final["errors"] if final else ["the clients gave no final line"],
        "slopes": {
            "rss_mb_per_hour": slope_per_hour([(s["t"], s["rss_mb"]) for s in steady]),
            "fds_per_hour": slope_per_hour([(s["t"], s["fds"]) for s in steady]),
        },
        "kproxy_cpu_s": samples[-1]["cpu_s"] - samples[0]["cpu_s"],
    }


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seconds", type=float, default=3600.0, help="how long the clients run")
    p.add_argument("--rate", type=float, default=1000.0, help="messages a second")
    p.add_argument("--size", type=int, default=1024, help="bytes a message")
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--window", type=float, default=300.0, help="seconds a reported window")
    p.add_argument("--chaos-every", type=float, default=60.0, help="seconds between disturbances")
    p.add_argument("--sample-every", type=float, default=10.0)
    p.add_argument("--heap", default="384m", help="each broker's JVM heap")
    p.add_argument("--no-write", action="store_true", help="print, do not write the record")


def main_soak(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="kp-soak-") as tmp:
        result = soak(args, Path(tmp))
    section = render_section(result)
    print(section)
    if not args.no_write:
        RESULTS_JSON.write_text(json.dumps(result, indent=1) + "\n")
        text = RESULTS_MD.read_text()
        RESULTS_MD.write_text(replace_marked_section(text, section, MARKER, END_MARKER, "## Soak"))
    ledger = result["ledger"]
    return 0 if ledger and not ledger["lost"] and not ledger["duplicated"] else 1
