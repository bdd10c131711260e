"""TLS through kproxy, haproxy and Kroxylicious, against TLS to the broker directly.

    python -m bench.tls_bench [--rounds 5] [--quick] [--paths direct,haproxy,...]

One Apache Kafka node (tests/peers) whose client listeners all speak TLS only, with
certificates made for the run (tests/tls_material.py). Each path terminates the client's
TLS with its own certificate and originates TLS to the broker, verifying the broker's:

``direct``        the client to the broker's TLS listener, nothing in between
``haproxy``       haproxy, TCP mode: `bind ... ssl crt`, `server ... ssl verify required`
                  (no Kafka parsing; the broker advertises haproxy's port to it)
``kroxylicious``  Kroxylicious pass-through, TLS gateway and TLS target cluster
``kproxy``        kproxy on uvloop, `listeners.tls` and `cluster.tls`

Workloads (bench/clients.py, confluent-kafka with `security.protocol=SSL` and the
name checked): produce 1 KiB records (acks=1), consume 1 KiB records from a pre-filled
topic, and one small produce at a time for latency. Rounds interleave the paths, each
round starting with the next path; every figure is reported per path as the median
over rounds, with its ratio to direct in the same round, and the proxy's CPU (/proc,
user+system) per GB and per request. Results go
to bench/tls_results.json and the "TLS" section of bench/RESULTS.md (a ``--quick`` run
only prints its section). Not a test.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.clients import WARMUP
from bench.formats import replace_marked_section
from bench.generate import generator
from bench.kproxy_peer import KproxyPeer
from bench.kroxylicious_peer import KroxyliciousPeer, KroxyliciousTls
from bench.machine import kproxy_revision
from bench.peers import HaproxyPeer, HaproxyTls, Unavailable
from bench.procfs import cpu_seconds
from bench.report import APPENDED_SECTIONS
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import LOOPBACK, free_ports
from tests.tls_material import TlsMaterial, kafka_truststore

REPO = Path(__file__).resolve().parent.parent
RESULTS_JSON = REPO / "bench" / "tls_results.json"
RESULTS_MD = REPO / "bench" / "RESULTS.md"
MARKER = APPENDED_SECTIONS
#: Where the TLS section ends: the sections after it (Fetch streaming) are not this
#: benchmark's to rewrite.
END_MARKER = "<!-- /tls_bench -->"
PATHS = ("direct", "haproxy", "kroxylicious", "kproxy")
SIZE = 1024


class TlsCluster:
    """A Kafka node with three TLS listeners: DIRECT (advertised as itself), EXTERNAL
    (advertised by a name only proxies dial, for kproxy and Kroxylicious) and HAPROXY
    (advertised as haproxy's port); INTERNAL stays plaintext for the harness."""

    def __init__(self, work: Path, certs: TlsMaterial) -> None:
        self.certs = certs
        self.cluster = KafkaCluster(1, heap="768m", workdir=work / "kafka", log_level="warn")
        node = self.cluster.nodes[1]
        self.direct_port, self.hap_listener_port, self.hap_port = free_ports(3)
        self.broker_pair = certs.issue(
            certs.cluster_ca, "broker", "*.kafka.invalid", "localhost", "127.0.0.1"
        )
        config = {
            "listeners": (
                f"CONTROLLER://{LOOPBACK}:{node.controller_port},"
                f"INTERNAL://{LOOPBACK}:{node.internal_port},"
                f"EXTERNAL://{LOOPBACK}:{node.external_port},"
                f"DIRECT://{LOOPBACK}:{self.direct_port},"
                f"HAPROXY://{LOOPBACK}:{self.hap_listener_port}"
            ),
            "advertised.listeners": (
                f"INTERNAL://{LOOPBACK}:{node.internal_port},"
                f"EXTERNAL://{node.external_advertised},"
                f"DIRECT://localhost:{self.direct_port},"
                f"HAPROXY://{LOOPBACK}:{self.hap_port}"
            ),
            "listener.security.protocol.map": (
                "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:SSL,DIRECT:SSL,HAPROXY:SSL"
            ),
            "log.retention.check.interval.ms": "10000",
            "file.delete.delay.ms": "1000",
        }
        for name in ("external", "direct", "haproxy"):
            prefix = f"listener.name.{name}."
            config |= self.broker_pair.kafka_keystore(prefix)
            config |= kafka_truststore(certs.cluster_ca_file, prefix)
        self.cluster.broker_config.update(config)

    @property
    def direct_bootstrap(self) -> str:
        return f"localhost:{self.direct_port}"


def start_path(path: str, kc: TlsCluster, work: Path) -> Any:
    certs = kc.certs
    served = certs.proxy(f"{path}-served")
    if path == "haproxy":
        combined = work / "haproxy.pem"
        combined.write_text(served.certificate.read_text() + served.key.read_text())
        tls = HaproxyTls(combined, certs.cluster_ca_file, "localhost")
        return HaproxyPeer(
            "haproxy-tls",
            f"{LOOPBACK}:{kc.hap_listener_port}",
            work,
            port=kc.hap_port,
            tls=tls,
        ).start()
    cluster = kc.cluster
    if path == "kroxylicious":
        tls_k = KroxyliciousTls(served.certificate, served.key, certs.cluster_ca_file)
        # Kroxylicious dials the names brokers advertise (it has no dial overrides): it
        # fronts the DIRECT listener, whose name resolves.
        return KroxyliciousPeer(
            "kroxylicious-tls", kc.direct_bootstrap, [1], work / path, tls_k
        ).start()
    peer = KproxyPeer(
        "kproxy-tls",
        "uvloop",
        cluster.external_bootstrap.split(","),
        work / path,
        dial_overrides=cluster.dial_overrides,
    )
    peer.config["listeners"]["tls"] = {
        "certificate": str(served.certificate),
        "key": str(served.key),
    }
    peer.config["cluster"]["tls"] = {"ca": str(certs.cluster_ca_file)}
    return peer.start()


def workload(kind: str, bootstrap: str, topic: str, ca: Path, **opts: Any) -> Any:
    """One `bench.clients` run over TLS, trusting `ca` and checking the name."""
    client = {
        "security.protocol": "SSL",
        "ssl.ca.location": str(ca),
        "ssl.endpoint.identification.algorithm": "https",
    }
    return generator(kind, bootstrap, topic, 600, client_config=json.dumps(client), **opts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tls_bench")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument(
        "--quick",
        action="store_true",
        help="2 rounds, small counts; prints its figures and leaves the record alone",
    )
    p.add_argument("--paths", default=",".join(PATHS))
    args = p.parse_args(argv)
    rounds = 2 if args.quick else args.rounds
    produce_count = 30_000 if args.quick else 1_000_000
    latency_count = 300 if args.quick else 5000
    # Before the run: the load it started under, the commit before it rewrites RESULTS.md.
    before = {"kproxy": kproxy_revision(), "load_before": load_average()}
    rows, unavailable = measure(args.paths.split(","), rounds, produce_count, latency_count)
    result = summarize(rows, unavailable, rounds) | before
    section = render_section(result)
    if args.quick:  # too few messages to stand for the record
        print(section)
        return 0
    RESULTS_JSON.write_text(json.dumps(result, indent=1) + "\n")
    RESULTS_MD.write_text(replace_section(RESULTS_MD.read_text(), section))
    print(json.dumps(result["summary"], indent=1))
    return 0


def measure(
    paths: list[str], rounds: int, produce_count: int, latency_count: int
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every path's rows, round by round, and why a path that did not run did not."""
    rows: list[dict[str, Any]] = []
    unavailable: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="kp-tls-bench-") as tmp:
        work = Path(tmp)
        certs = TlsMaterial(work / "certs")
        kc = TlsCluster(work, certs)
        kc.cluster.start()
        peers: dict[str, Any] = {}
        try:
            for path in paths:
                if path == "direct":
                    continue
                try:
                    peers[path] = start_path(path, kc, work)
                except (Unavailable, RuntimeError, TimeoutError) as exc:
                    unavailable[path] = str(exc)[:300]
            live = [p for p in paths if p == "direct" or p in peers]
            consume_topic = "tls-consume"
            kc.cluster.create_topic(consume_topic, 1, 1)
            workload(
                "produce", kc.direct_bootstrap, consume_topic, certs.cluster_ca_file,
                size=SIZE, count=produce_count + WARMUP, acks=1, warmup=0,
            )  # fmt: skip
            for r in range(rounds):
                # A different path first each round: none always meets a cold broker.
                for path in live[r % len(live) :] + live[: r % len(live)]:
                    try:
                        rows.extend(one_round(r, path, peers.get(path), kc, certs, produce_count,
                                              latency_count, consume_topic))  # fmt: skip
                    except RuntimeError as exc:  # that path is left out of the rest
                        unavailable[path] = f"round {r}: {str(exc)[-300:]}"
                        live.remove(path)
                        continue
                    print(json.dumps(rows[-3:]), flush=True)
        finally:
            for peer in peers.values():
                peer.stop()
            kc.cluster.close()
    return rows, unavailable


def one_round(
    r: int,
    path: str,
    peer: Any,
    kc: TlsCluster,
    certs: TlsMaterial,
    produce_count: int,
    latency_count: int,
    consume_topic: str,
) -> list[dict[str, Any]]:
    bootstrap = kc.direct_bootstrap if peer is None else peer.bootstrap
    ca = certs.cluster_ca_file if peer is None else certs.proxy_ca_file
    pid = None if peer is None else peer.pid
    topic = f"tls-{path}-{r}"
    kc.cluster.create_topic(topic, 1, 1)
    out = []
    for kind, opts in (
        ("produce", {"size": SIZE, "count": produce_count, "acks": 1}),
        ("consume", {"size": SIZE, "count": produce_count}),
        ("latency", {"size": 100, "count": latency_count, "acks": 1}),
    ):
        target = consume_topic if kind == "consume" else topic
        cpu = 0.0 if pid is None else cpu_seconds(pid)
        got = workload(kind, bootstrap, target, ca, **opts)
        used = 0.0 if pid is None else cpu_seconds(pid) - cpu
        row = {"round": r, "path": path, "workload": kind, "proxy_cpu_s": round(used, 3), **got}
        if kind != "latency":
            row["cpu_s_per_gb"] = round(used / (got["bytes"] / 1e9), 3)
        else:
            row["cpu_us_per_request"] = round(1e6 * used / max(got["messages"], 1), 1)
        out.append(row)
    kc.cluster.admin().delete_topics([topic])
    return out


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def summarize(
    rows: list[dict[str, Any]], unavailable: dict[str, str], rounds: int
) -> dict[str, Any]:
    figures = {
        "produce": "mb_per_s",
        "consume": "mb_per_s",
        "latency": "p99_ms",
    }
    summary: dict[str, dict[str, Any]] = {}
    for kind, key in figures.items():
        direct = {
            r["round"]: r[key] for r in rows if r["workload"] == kind and r["path"] == "direct"
        }
        for path in sorted({r["path"] for r in rows}):
            mine = [r for r in rows if r["workload"] == kind and r["path"] == path]
            if not mine:
                continue
            ratios = [r[key] / direct[r["round"]] for r in mine if direct.get(r["round"])]
            entry: dict[str, Any] = {
                key: round(statistics.median(r[key] for r in mine), 3),
                "ratio_to_direct": round(statistics.median(ratios), 3) if ratios else None,
                "ratio_spread": [round(min(ratios), 3), round(max(ratios), 3)] if ratios else None,
            }
            if kind == "latency":
                entry["p50_ms"] = round(statistics.median(r["p50_ms"] for r in mine), 3)
                entry["cpu_us_per_request"] = statistics.median(
                    r["cpu_us_per_request"] for r in mine
                )
            else:
                entry["cpu_s_per_gb"] = statistics.median(r["cpu_s_per_gb"] for r in mine)
            summary.setdefault(kind, {})[path] = entry
    return {
        "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "unavailable": unavailable,
        "summary": summary,
        "rows": rows,
    }


def render_section(result: dict[str, Any]) -> str:
    """The "TLS" section of bench/RESULTS.md for ``result``, between its markers."""
    s = result["summary"]
    lines = [
        MARKER,
        "## TLS",
        "",
        f"Written by `python -m bench.tls_bench` ({result['rounds']} interleaved rounds, "
        f"{result['when']}, kproxy {result.get('kproxy', '?')}, {result['cpus']} CPUs, "
        f"load before {result['load_before']}; raw "
        "figures in `bench/tls_results.json`). One Apache Kafka node with TLS-only client",
        "listeners; every path terminates the client's TLS with its own certificate and",
        "originates TLS to the broker, verifying it. confluent-kafka clients check the",
        "certificate's name. Medians over rounds; *ratio*: to direct in the same round",
        "(spread: lowest and highest round). CPU: the proxy process's user+system time.",
        "",
        "| path | produce 1 KiB MB/s (ratio) | consume 1 KiB MB/s (ratio) | p99 small produce ms "
        "(ratio) | p50 ms | CPU s/GB produce | CPU s/GB consume | CPU us/request |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def cell(kind: str, path: str, key: str) -> str:
        e = s.get(kind, {}).get(path)
        if e is None:
            return "-"
        ratio = e["ratio_to_direct"]
        lo, hi = e["ratio_spread"] or (None, None)
        return f"{e[key]:,.2f} ({ratio:.2f}, {lo:.2f}-{hi:.2f})" if ratio else f"{e[key]:,.2f}"

    for path in PATHS:
        if path not in s.get("produce", {}):
            continue
        lat = s["latency"][path]
        cpu_p = s["produce"][path]["cpu_s_per_gb"]
        cpu_c = s["consume"][path]["cpu_s_per_gb"]
        lines.append(
            f"| {path} | {cell('produce', path, 'mb_per_s')} | {cell('consume', path, 'mb_per_s')}"
            f" | {cell('latency', path, 'p99_ms')} | {lat['p50_ms']:.2f} | "
            + (f"{cpu_p:.2f} | {cpu_c:.2f} | {lat['cpu_us_per_request']:.0f} |"
               if path != "direct" else "- | - | - |")
        )  # fmt: skip
    for path, why in result["unavailable"].items():
        lines.append(f"\n{path} did not run: {why}")
    lines.append(END_MARKER)
    return "\n".join(lines) + "\n"


def replace_section(text: str, section: str) -> str:
    """``text`` (bench/RESULTS.md) with its TLS section replaced by ``section``."""
    return replace_marked_section(text, section, MARKER, END_MARKER, "## TLS")


if __name__ == "__main__":
    sys.exit(main())
