"""Kafka frames over a plain socket, for tests that must send what no client would."""

from __future__ import annotations

import socket
import struct


def request(api_key: int, version: int, body: bytes = b"", corr: int = 7) -> bytes:
    """A request frame with header v1 (api key, version, correlation id, client id)."""
    cid = b"bad-input"
    payload = struct.pack(">hhih", api_key, version, corr, len(cid)) + cid + body
    return struct.pack(">i", len(payload)) + payload


def metadata_v1(corr: int, every_topic: bool = False) -> bytes:
    """Metadata v1 asking for no topics (every broker answers it, with its brokers), or
    for every topic (a null array)."""
    return request(3, 1, struct.pack(">i", -1 if every_topic else 0), corr=corr)


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


def broker_registration_of_size(size: int) -> bytes:
    """BrokerRegistration v0 filled to about `size` bytes with 8-byte listener entries:
    the controller-plane attack frame (hundreds of thousands of tiny listeners)."""
    entry = struct.pack(">h", 1) + b"L" + struct.pack(">h", 1) + b"h" + struct.pack(">H", 1)
    count = size // len(entry)
    body = struct.pack(">ih", 1, 0) + bytes(16) + struct.pack(">i", count) + entry * count
    return request(62, 0, body)


def add_raft_voter_of_size(size: int) -> bytes:
    """AddRaftVoter v0 (flexible, header v2) filled to about `size` bytes with tiny
    listeners: served on client listeners, so gathered whole and walked."""
    entry = b"\x02L" + b"\x02h" + struct.pack(">H", 1) + b"\x00"  # name, host, port, tags
    count = size // len(entry)
    listeners = uvarint(count + 1) + entry * count
    body = b"\x00" + struct.pack(">ii", 1000, 4) + bytes(16) + listeners + b"\x00"
    cid = b"attack"
    payload = struct.pack(">hhih", 80, 0, 1, len(cid)) + cid + b"\x00" + body
    return struct.pack(">i", len(payload)) + payload


def uvarint(value: int) -> bytes:
    """Kafka's unsigned varint, written here rather than with kproxy's own encoder."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# A real TLS 1.2 ClientHello prefix (record header + handshake header).
TLS_CLIENT_HELLO = bytes.fromhex("16030100c4010000c00303") + bytes(32) + b"\x00\x00\x02\x13\x01"
