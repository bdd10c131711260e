"""What a proxy process spent over a measured run: its CPU and memory from /proc, and
kproxy's own request and byte counters (its /metrics), shared by `bench.harness` and
`bench.paired`; and what the broker behind it spent (`BrokerMeter`)."""

from __future__ import annotations

from typing import Any

from bench.kproxy_peer import KproxyPeer
from bench.procfs import CpuSince, memory_kb, reset_peak_rss


class ProxyMeter:
    """Started before a run (`proxy` None for direct: nothing to measure), read once it
    has ended with `records`."""

    def __init__(self, proxy: Any) -> None:
        self.pid: int | None = proxy.pid if proxy is not None else None
        self.kproxy = proxy if isinstance(proxy, KproxyPeer) else None
        self.metrics0 = self.kproxy.metrics() if self.kproxy is not None else None
        self.cpu: CpuSince | None = None
        self.rss0_kb = 0
        if self.pid is not None:
            reset_peak_rss(self.pid)
            self.cpu = CpuSince(self.pid)
            self.rss0_kb = memory_kb(self.pid).get("VmRSS", 0)

    def records(self, payload_bytes: float) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The run's ``proxy`` record (CPU, memory; None without a process) and its
        ``kproxy`` record (requests, wire bytes, CPU per GB and per request; None for
        another proxy)."""
        if self.cpu is None:  # no process: direct
            return None, None
        user, kernel = self.cpu.spent()
        cpu = user + kernel
        mem = memory_kb(self.cpu.pid)
        proxy: dict[str, Any] = {
            "cpu_seconds": round(cpu, 3),
            "cpu_user_seconds": round(user, 3),  # of cpu_seconds, in user space
            "rss_before_mb": round(self.rss0_kb / 1024, 1),
            "rss_mb": round(mem.get("VmRSS", 0) / 1024, 1),
            "peak_rss_mb": round(mem.get("VmHWM", 0) / 1024, 1),
            "cpu_s_per_gb_payload": (
                round(cpu / (payload_bytes / 1e9), 3) if payload_bytes else None
            ),
        }
        if self.kproxy is None or self.metrics0 is None:
            return proxy, None
        m1 = self.kproxy.metrics()
        d = {k: m1[k] - self.metrics0.get(k, 0.0) for k in m1}
        wire = d["request_bytes"] + d["response_bytes"]
        return proxy, {
            "requests": int(d["requests"]),
            "responses": int(d["responses"]),
            "wire_bytes": int(wire),
            "cpu_s_per_gb_wire": round(cpu / (wire / 1e9), 3) if wire else None,
            "cpu_s_per_100k_requests": (
                round(cpu / d["requests"] * 1e5, 3) if d["requests"] else None
            ),
        }


class BrokerMeter:
    """The broker's CPU over one run, from /proc, started just before its client.

    A broker's own cost per message is not steady on this machine: Apache Kafka's system
    time per appended message doubles for minutes at a time (bench/README.md,
    "Upstreams"). Beside each run's throughput it tells a slow broker from a slow path.
    """

    def __init__(self, pid: int | None) -> None:
        self.cpu = CpuSince(pid) if pid is not None else None

    def record(self, messages: float | None) -> dict[str, Any] | None:
        """The run's ``broker`` record: its CPU seconds, of them in user space, and per
        message in microseconds (None without a broker process, or if it exited)."""
        if self.cpu is None:
            return None
        try:
            user, system = self.cpu.spent()
        except OSError:
            return None
        cpu = user + system
        return {
            "cpu_seconds": round(cpu, 3),
            "cpu_user_seconds": round(user, 3),
            "cpu_us_per_message": round(cpu / messages * 1e6, 3) if messages else None,
        }
