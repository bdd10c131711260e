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
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from kproxy.mockcluster import MockCluster
from kproxy.protocol.primitives import encode_uvarint

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def request(api_key: int, version: int, body: bytes) -> bytes:
    cid = b"attack"
    payload = struct.pack(">hhih", api_key, version, 1, len(cid)) + cid + body
    return struct.pack(">i", len(payload)) + payload


def broker_registration(size: int) -> bytes:
    entry = struct.pack(">h", 1) + b"L" + struct.pack(">h", 1) + b"h" + struct.pack(">H", 1)
    count = size // len(entry)
    return request(
        62, 0, struct.pack(">ih", 1, 0) + bytes(16) + struct.pack(">i", count) + entry * count
    )


def add_raft_voter(size: int) -> bytes:
    """AddRaftVoter v0 (flexible): ClusterId, TimeoutMs, VoterId, VoterDirectoryId, Listeners."""
    entry = b"\x02L" + b"\x02h" + struct.pack(">H", 1) + b"\x00"  # name, host, port, no tags
    count = size // len(entry)
    listeners = encode_uvarint(count + 1) + entry * count
    body = b"\x00" + struct.pack(">ii", 1000, 4) + bytes(16) + listeners + b"\x00"
    cid = b"attack"
    payload = struct.pack(">hhih", 80, 0, 1, len(cid)) + cid + b"\x00" + body
    return struct.pack(">i", len(payload)) + payload


def produce(size: int) -> bytes:
    """Produce v3 with one partition whose records are `size` zero bytes."""
    records = bytes(size)
    body = struct.pack(">hhi", -1, 1, 1000) + struct.pack(">i", 1) + struct.pack(">h", 1) + b"t"
    body += struct.pack(">ii", 1, 0) + struct.pack(">i", len(records)) + records
    return request(0, 3, body)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hwm_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


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
        port, admin = free_port(), free_port()
        config = {
            "cluster": {"bootstrap_servers": mc.bootstraps.split(",")},
            "listeners": {"bootstrap_port": port, "broker_port_base": 0},
            "limits": {"max_frame_bytes": 256 << 20},
            "admin": {"port": admin},
            "events": {"enabled": False},
            "log": {"level": "WARNING"},
        }
        path = Path(tmp) / "kproxy.yaml"
        path.write_text(yaml.safe_dump(config))
        proc = subprocess.Popen(
            [sys.executable, "-m", "kproxy", "run", "--config", str(path)],
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port)):
                    break
                time.sleep(0.05)
            print("| frame | size | kproxy CPU s | peak RSS growth | longest /healthz |")
            print("|---|---|---|---|---|")
            for name, make in (
                ("BrokerRegistration (refused)", broker_registration),
                ("AddRaftVoter (walked to the cap)", add_raft_voter),
                ("Produce (passed through)", produce),
            ):
                for mib in sizes:
                    frame = make(mib << 20)
                    Path(f"/proc/{proc.pid}/clear_refs").write_text("5")
                    base_hwm, base_cpu = hwm_bytes(proc.pid), cpu_seconds(proc.pid)
                    watch = LoopWatch(f"http://{LOOPBACK}:{admin}/healthz")
                    watch.start()
                    send(port, frame)
                    time.sleep(0.2)
                    watch.stop.set()
                    watch.join()
                    grew = (hwm_bytes(proc.pid) - base_hwm) / (1 << 20)
                    cpu = cpu_seconds(proc.pid) - base_cpu
                    print(
                        f"| {name} | {mib} MiB | {cpu:.2f} | {grew:.1f} MiB |"
                        f" {watch.longest * 1000:.0f} ms |"
                    )
        finally:
            proc.terminate()
            proc.wait(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
