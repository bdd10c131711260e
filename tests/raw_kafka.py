"""Kafka frames over a plain socket, for tests that must send what no client would."""

from __future__ import annotations

import socket
import struct


def request(api_key: int, version: int, body: bytes = b"", corr: int = 7) -> bytes:
    """A request frame with header v1 (api key, version, correlation id, client id)."""
    cid = b"bad-input"
    payload = struct.pack(">hhih", api_key, version, corr, len(cid)) + cid + body
    return struct.pack(">i", len(payload)) + payload


def metadata_v1(corr: int) -> bytes:
    """Metadata v1 asking for no topics: every broker answers it, with its brokers."""
    return request(3, 1, struct.pack(">i", 0), corr=corr)


def read_frame(sock: socket.socket) -> bytes:
    """One whole frame's body (after its size); ConnectionError if the peer closes first."""

    def exact(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed before a whole frame arrived")
            buf += chunk
        return buf

    (size,) = struct.unpack(">i", exact(4))
    return exact(size)


def closed_by_peer(sock: socket.socket, timeout: float = 10) -> bool:
    """True once the other side closes (recv gives b"" or a reset) within `timeout`."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
