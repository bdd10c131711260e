"""The PROXY protocol header (HAProxy's, versions 1 and 2), sans-IO.

A TCP load balancer in front of kproxy (an AWS NLB, haproxy with `send-proxy-v2`)
connects from its own address; the header it sends before anything else carries the
client's. kproxy reads it off the front of a connection, before TLS and before any
Kafka frame, and takes the client's address from it (`kproxy.runtime.client`).

Version 1 is one text line, `PROXY TCP4 192.0.2.1 198.51.100.1 56324 9092\\r\\n`, 107
bytes at most. Version 2 is binary: a 12-byte signature, a version and command byte,
an address family and protocol byte, a 16-bit length, then the addresses and TLVs
(ignored here). A LOCAL command (the balancer's own health check) or an UNKNOWN/UNSPEC
family carries no client address: the connection's own stands.
"""

from __future__ import annotations

import ipaddress
from typing import Final, NamedTuple

from kproxy.protocol.errors import ProtocolError

V1_PREFIX: Final = b"PROXY "
V2_SIGNATURE: Final = b"\r\n\r\n\x00\r\nQUIT\n"
V1_MAX_BYTES: Final = 107  # the longest line version 1 allows, CRLF included
V2_FIXED_BYTES: Final = 16
# Version 2's address blocks: (family, protocol) byte -> address bytes; STREAM only.
_V2_INET_STREAM: Final = 0x11
_V2_INET6_STREAM: Final = 0x21
_V2_ADDRESS_BYTES: Final = {_V2_INET_STREAM: 12, _V2_INET6_STREAM: 36}


class ProxyHeaderError(ProtocolError):
    reason = "proxy_header_malformed"


class ProxyHeader(NamedTuple):
    """A header read off the front of a connection."""

    size: int  # its bytes: what follows is the connection's own stream
    source: tuple[str, int] | None  # the client's (host, port); None: LOCAL or UNKNOWN


def starts_with_header(data: bytes) -> bool | None:
    """Whether `data` begins with a PROXY header's signature (either version); None
    while too few bytes are in hand to tell."""
    for signature in (V1_PREFIX, V2_SIGNATURE):
        n = min(len(data), len(signature))
        if data[:n] == signature[:n]:
            if n == len(signature):
                return True
            return None if len(data) < len(signature) else False
    return False


def parse_header(data: bytes) -> ProxyHeader | None:
    """The header at the front of `data`, or None while it is not whole yet.
    ProxyHeaderError for one that is malformed, or longer than a header can be."""
    if data.startswith(V2_SIGNATURE):
        return _parse_v2(data)
    if data.startswith(V1_PREFIX):
        return _parse_v1(data)
    raise ProxyHeaderError("no PROXY protocol signature")


def _parse_v1(data: bytes) -> ProxyHeader | None:
    end = data.find(b"\r\n", 0, V1_MAX_BYTES)
    if end < 0:
        if len(data) >= V1_MAX_BYTES:
            raise ProxyHeaderError(f"a PROXY v1 line longer than {V1_MAX_BYTES} bytes")
        return None
    try:
        words = data[:end].decode("ascii").split(" ")
    except UnicodeDecodeError:
        raise ProxyHeaderError("a PROXY v1 line that is not ASCII") from None
    size = end + 2
    if len(words) >= 2 and words[1] == "UNKNOWN":
        return ProxyHeader(size, None)
    if len(words) != 6 or words[1] not in ("TCP4", "TCP6"):
        raise ProxyHeaderError("a PROXY v1 line is PROXY TCP4|TCP6 SRC DST SPORT DPORT")
    version = 4 if words[1] == "TCP4" else 6
    source = _address(words[2], version)
    _address(words[3], version)
    source_port = _port(words[4])
    _port(words[5])
    return ProxyHeader(size, (source, source_port))


def _parse_v2(data: bytes) -> ProxyHeader | None:
    if len(data) < V2_FIXED_BYTES:
        return None
    version_command, family = data[12], data[13]
    length = data[14] << 8 | data[15]
    if version_command >> 4 != 2:
        raise ProxyHeaderError(f"PROXY v2 header of version {version_command >> 4}")
    command = version_command & 0x0F
    if command > 1:
        raise ProxyHeaderError(f"PROXY v2 command {command} (0 LOCAL and 1 PROXY exist)")
    size = V2_FIXED_BYTES + length
    if len(data) < size:
        return None
    if command == 0 or family >> 4 == 0:  # LOCAL, or AF_UNSPEC: no client address
        return ProxyHeader(size, None)
    need = _V2_ADDRESS_BYTES.get(family)
    if need is None:
        raise ProxyHeaderError(f"PROXY v2 family and protocol 0x{family:02x}: TCP over IP only")
    if length < need:
        raise ProxyHeaderError(f"PROXY v2 addresses of {length} bytes, {need} needed")
    at = V2_FIXED_BYTES
    if family == _V2_INET_STREAM:
        host = str(ipaddress.IPv4Address(data[at : at + 4]))
        port = data[at + 8] << 8 | data[at + 9]
    else:
        host = str(ipaddress.IPv6Address(data[at : at + 16]))
        port = data[at + 32] << 8 | data[at + 33]
    return ProxyHeader(size, (host, port))


def _address(text: str, version: int) -> str:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise ProxyHeaderError(f"{text!r} is not an IP address") from None
    if address.version != version:
        raise ProxyHeaderError(f"{text!r} is not an IPv{version} address")
    return str(address)


def _port(text: str) -> int:
    if not text.isdigit() or len(text) > 5 or int(text) > 65535:
        raise ProxyHeaderError(f"{text!r} is not a port")
    return int(text)
