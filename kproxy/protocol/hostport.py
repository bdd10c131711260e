"""Host and port text: parsing, formatting and comparing broker addresses."""

from __future__ import annotations

import ipaddress
import re
from typing import Final

HostPort = tuple[str, int]
"""A ``(host, port)`` pair; IPv6 hosts are stored without brackets."""

MAX_PORT: Final = 65535
HOST_PORT_MESSAGE: Final = "must be host:port"
_HOSTNAME_RE: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?")


def is_valid_host(host: str) -> bool:
    """A hostname, an IPv4 address or a bare (unbracketed) IPv6 address."""
    if ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return False
        return True
    return len(host) <= 253 and _HOSTNAME_RE.fullmatch(host) is not None


def is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def parse_host_port(s: str) -> HostPort:
    """Parse ``host:port`` (IPv6 as ``[::1]:9092``) into ``(host, port)``.

    The port must be 1-65535. Raises ValueError ``must be host:port`` on any problem.
    """
    if not isinstance(s, str):
        raise ValueError(HOST_PORT_MESSAGE)
    if s.startswith("["):
        end = s.find("]")
        if end < 0 or s[end + 1 : end + 2] != ":":
            raise ValueError(HOST_PORT_MESSAGE)
        host, port_text = s[1:end], s[end + 2 :]
        if ":" not in host or not is_valid_host(host):
            raise ValueError(HOST_PORT_MESSAGE)
    else:
        host, sep, port_text = s.rpartition(":")
        # A bare IPv6 address ("::1:9092") is ambiguous: brackets are required.
        if not sep or ":" in host or not is_valid_host(host):
            raise ValueError(HOST_PORT_MESSAGE)
    if not (port_text.isascii() and port_text.isdigit()) or len(port_text) > 5:
        raise ValueError(HOST_PORT_MESSAGE)
    port = int(port_text)
    if not 1 <= port <= MAX_PORT:
        raise ValueError(HOST_PORT_MESSAGE)
    return host, port


def bracketed(host: str) -> str:
    """A host as it is written before ``:port``: an IPv6 address in brackets (``::1``
    followed by ``:5000`` would read as one longer address)."""
    return f"[{host}]" if ":" in host else host


def format_host_port(host: str, port: int) -> str:
    """The inverse of `parse_host_port`: brackets IPv6 hosts."""
    return f"{bracketed(host)}:{port}"


def normalize_host(host: str) -> str:
    """Canonical form for comparing hosts: lower-case names, compressed IP addresses."""
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        return host.lower()
