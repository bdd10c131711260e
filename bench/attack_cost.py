"""What the worst frames a client can send cost kproxy: CPU and resident memory.

    python -m bench.attack_cost [--sizes 2,8,32]

Starts librdkafka's mock cluster and kproxy (`max_frame_bytes` 256 MiB), then sends,
each on its own connection: a BrokerRegistration of tiny listener entries (the
controller plane, refused from its first bytes), an AddRaftVoter of tiny listeners
(served on client listeners, so gathered whole and walked up to the walker's endpoint
cap), and a Produce (passed through as it arrives). For each it reports kproxy's CPU
seconds (/proc/PID/stat) and the growth of its peak resident memory (VmHWM, reset
before each frame through /proc/PID/clear_refs), and the longest the event loop went
without answering a /healthz poll while the frame was handled.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import struct
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from kproxy.demo.mockcluster import MockCluster
from tests.kproxy_process import KproxyProcess
from tests.raw_kafka import add_raft_voter_of_size, broker_registration_of_size, request

LOOPBACK = "127.0.0.1"


def produce(size: int) -> bytes:
    """Produce v3 with one partition whose records are `size` zero bytes."""
    records = bytes(size)
    body = struct.pack(">hhi", -1, 1, 1000) + struct.pack(">i", 1) + struct.pack(">h", 1) + b"t"
    body += struct.pack(">ii", 1, 0) + struct.pack(">i", len(records)) + records
    return request(0, 3, body)


class LoopWatch(threading.Thread):
    """Polls /healthz; the longest answer is how long the event loop was busy."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.longest = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            with contextlib.suppress(OSError), urllib.request.urlopen(self.url, timeout=30):
                pass
            self.longest = max(self.longest, time.monotonic() - started)
            time.sleep(0.005)


def send(port: int, frame: bytes) -> None:
    """Send the frame; return once kproxy closed the connection or answered it."""
    with socket.create_connection((LOOPBACK, port)) as s, contextlib.suppress(OSError):
        s.sendall(frame)
        s.settimeout(10)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
            if len(got) >= 4 and len(got) >= 4 + struct.unpack_from(">i", got)[0]:
                return


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2,8,32", help="frame sizes in MiB")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    with MockCluster(brokers=1) as mc, tempfile.TemporaryDirectory() as tmp:
        kp = KproxyProcess(
            Path(tmp),
            mc.bootstraps.split(","),
            limits={"max_frame_bytes": 256 << 20},
            events={"enabled": False},
            log={"level": "WARNING"},
        )
        with kp:
            print("| frame | size | kproxy CPU s | peak RSS growth | longest /healthz |")
            print("|---|---|---|---|---|")
            for name, make in (
                ("BrokerRegistration (refused)", broker_registration_of_size),
                ("AddRaftVoter (walked to the cap)", add_raft_voter_of_size),
                ("Produce (passed through)", produce),
            ):
                for mib in sizes:
                    frame = make(mib << 20)
                    Path(f"/proc/{kp.pid}/clear_refs").write_text("5")
                    base_hwm, base_cpu = kp.rss_bytes("VmHWM"), kp.cpu_seconds()
                    watch = LoopWatch(f"http://{LOOPBACK}:{kp.admin_port}/healthz")
                    watch.start()
                    send(kp.bootstrap_port, frame)
                    time.sleep(0.2)
                    watch.stop.set()
                    watch.join()
                    grew = (kp.rss_bytes("VmHWM") - base_hwm) / (1 << 20)
                    cpu = kp.cpu_seconds() - base_cpu
                    print(
                        f"| {name} | {mib} MiB | {cpu:.2f} | {grew:.1f} MiB |"
                        f" {watch.longest * 1000:.0f} ms |"
                    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
