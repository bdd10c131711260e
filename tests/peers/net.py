"""Loopback networking helpers for the real-peer test harness.

Everything here binds or dials ``127.0.0.1`` only. Readiness is always a polled condition
with a deadline (never a fixed sleep), and every timeout raises :class:`TimeoutError` with a
message that says what was being waited for.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from typing import NamedTuple, TypeVar

__all__ = [
    "LOOPBACK",
    "Metadata",
    "PartitionMeta",
    "TopicMeta",
    "connected_peers",
    "fetch_metadata",
    "free_port",
    "free_ports",
    "metadata_brokers",
    "port_open",
    "wait_for_port",
    "wait_until",
]

LOOPBACK = "127.0.0.1"

T = TypeVar("T")


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that the OS just handed out (bind to port 0).

    The socket is closed before returning, so a peer started right after can bind it.
    """
    return free_ports(1)[0]


# Every port handed out in this process. A closed port may come back from the very next
# bind to port 0, so two calls could otherwise give one test the same port twice (say a
# proxy's listener and its admin server, or a "dead" broker address and the proxy).
_handed_out: set[int] = set()


def free_ports(count: int) -> list[int]:
    """Return ``count`` distinct OS-assigned loopback ports, none handed out before by
    this process.

    Every socket is held open until all ports are chosen, so the kernel cannot hand out
    one port twice within a call; a port an earlier call returned is drawn again.
    """
    socks: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind((LOOPBACK, 0))
            port = int(s.getsockname()[1])
            if port not in _handed_out:
                _handed_out.add(port)
                ports.append(port)
        return ports
    finally:
        for s in socks:
            s.close()


def port_open(host: str, port: int, timeout: float = 0.25) -> bool:
    """True if a TCP connect to ``host:port`` succeeds right now."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    interval: float = 0.05,
    what: str = "condition",
    *,
    ignore: tuple[type[BaseException], ...] = (),
) -> T:
    """Poll ``predicate`` until it returns a truthy value and return that value.

    Exceptions of the types in ``ignore`` count as "not yet"; the last one is chained to
    the :class:`TimeoutError` raised when ``timeout`` seconds pass. ``predicate`` is always
    evaluated at least once, and once more after the deadline has passed.
    """
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    last_value: T | None = None
    while True:
        expired = time.monotonic() >= deadline
        try:
            value = predicate()
        except ignore as exc:
            last_exc = exc
        else:
            if value:
                # The last error's traceback holds this frame and, through it, the
                # callers' locals (a librdkafka client among them): a cycle that the
                # collector might break in a librdkafka thread, where destroying a
                # client crashes the interpreter. Dropped here, it goes by refcount.
                last_exc = None
                return value
            last_value = value
        if expired:
            detail = f"; last error: {last_exc!r}" if last_exc is not None else ""
            if last_exc is None and last_value is not None:
                detail = f"; last value: {last_value!r}"
            raise TimeoutError(f"timed out after {timeout:.1f}s waiting for {what}{detail}") from (
                last_exc
            )
        time.sleep(max(0.0, min(interval, deadline - time.monotonic())))


def wait_for_port(
    host: str,
    port: int,
    timeout: float = 30.0,
    *,
    alive: Callable[[], bool] | None = None,
    what: str | None = None,
) -> None:
    """Wait until ``host:port`` accepts TCP connections.

    ``alive``, if given, is checked on every poll; when it returns False (the process that
    should open the port has exited) a :class:`RuntimeError` is raised at once instead of
    waiting for the deadline.
    """
    label = what or f"TCP port {host}:{port} to accept connections"

    def ready() -> bool:
        if alive is not None and not alive():
            raise RuntimeError(f"process exited while waiting for {label}")
        return port_open(host, port)

    wait_until(ready, timeout, interval=0.02, what=label)


# ---------------------------------------------------------------------------
# A minimal, independent Metadata v1 client (advertised addresses, leaders, ISR).
# ---------------------------------------------------------------------------


class PartitionMeta(NamedTuple):
    """One partition in a Metadata v1 answer."""

    error: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class TopicMeta(NamedTuple):
    error: int
    internal: bool
    partitions: dict[int, PartitionMeta]


class Metadata(NamedTuple):
    """A Metadata v1 answer: ``brokers`` is ``{node_id: (host, port)}``."""

    brokers: dict[int, tuple[str, int]]
    controller_id: int
    topics: dict[str, TopicMeta]


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed while reading a Kafka response")
        buf += chunk
    return bytes(buf)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple[int, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def int8(self) -> int:
        return self.take(">b")[0]

    def int16(self) -> int:
        return self.take(">h")[0]

    def int32(self) -> int:
        return self.take(">i")[0]

    def string(self) -> str | None:
        size = self.int16()
        if size < 0:
            return None
        text = self.data[self.pos : self.pos + size].decode()
        self.pos += size
        return text

    def int32_array(self) -> tuple[int, ...]:
        count = self.int32()
        return tuple(self.int32() for _ in range(max(count, 0)))


def fetch_metadata(
    host: str, port: int, topics: list[str] | None = None, timeout: float = 5.0
) -> Metadata:
    """Send one Metadata v1 request and return the parsed answer.

    ``topics=None`` asks for all topics, ``[]`` for none (brokers only). This is a tiny
    hand-rolled client (non-flexible v1 framing), independent of kproxy's codec and of any
    client library, so the harness can read what a peer *advertises* without a client
    trying to connect to those addresses. Kafka 4.x, Tansu and the librdkafka mock all
    answer Metadata v1 without a prior ApiVersions.
    """
    client_id = b"kproxy-peers"
    correlation_id = 0x6B70
    # Request header v1: api_key=3 (Metadata), api_version=1, correlation_id, client_id.
    body = struct.pack(">hhih", 3, 1, correlation_id, len(client_id)) + client_id
    if topics is None:
        body += struct.pack(">i", -1)
    else:
        body += struct.pack(">i", len(topics))
        for name in topics:
            raw = name.encode()
            body += struct.pack(">h", len(raw)) + raw
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", _recv_exact(sock, 4))
        r = _Reader(_recv_exact(sock, size))
    if r.int32() != correlation_id:
        raise ValueError("unexpected correlation id in Metadata response")
    brokers: dict[int, tuple[str, int]] = {}
    for _ in range(max(r.int32(), 0)):
        node_id = r.int32()
        bhost = r.string() or ""
        bport = r.int32()
        r.string()  # rack
        brokers[node_id] = (bhost, bport)
    controller_id = r.int32()
    parsed: dict[str, TopicMeta] = {}
    for _ in range(max(r.int32(), 0)):
        terr = r.int16()
        name = r.string() or ""
        internal = bool(r.int8())
        parts: dict[int, PartitionMeta] = {}
        for _ in range(max(r.int32(), 0)):
            perr = r.int16()
            index = r.int32()
            leader = r.int32()
            replicas = r.int32_array()
            isr = r.int32_array()
            parts[index] = PartitionMeta(perr, leader, replicas, isr)
        parsed[name] = TopicMeta(terr, internal, parts)
    return Metadata(brokers, controller_id, parsed)


def metadata_brokers(host: str, port: int, timeout: float = 5.0) -> dict[int, tuple[str, int]]:
    """``{node_id: (advertised host, port)}`` from one Metadata v1 request (no topics)."""
    return fetch_metadata(host, port, [], timeout).brokers


def _tcp_table() -> list[tuple[int, int, str, int]]:
    """(local port, remote port, state, inode) of every IPv4/IPv6 TCP socket here."""
    rows = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(name).read().splitlines()[1:]  # noqa: SIM115 - read whole at once
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            local, remote, state, inode = cols[1], cols[2], cols[3], int(cols[9])
            rows.append(
                (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16), state, inode)
            )
    return rows


def connected_peers(port: int) -> dict[int, set[int]]:
    """Who holds the other end of each established loopback connection to ``port``:
    ``{peer port: pids owning that socket}`` (from /proc, root or same user)."""
    import os

    established = "01"
    table = _tcp_table()
    peer_ports = {r for lp, r, st, _ in table if lp == port and st == established}
    inodes = {ino: lp for lp, r, st, ino in table if lp in peer_ports and r == port}
    owners: dict[int, set[int]] = {p: set() for p in peer_ports}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                ino = int(link[8:-1])
                if ino in inodes:
                    owners[inodes[ino]].add(int(pid))
    return owners
