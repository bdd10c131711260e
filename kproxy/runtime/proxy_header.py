"""The PROXY protocol header off the front of a client connection, before TLS and any
Kafka frame (`listeners.proxy_protocol`): the client's address from it, or the
connection closed with a reason, a log line and a metric.

A connection's first bytes wait here until they say whether a header is there and, if
so, until it is whole (107 bytes at most in version 1, 16 + its length in version 2);
the first-request timeout closes one that stops half-way.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from kproxy.protocol.proxy_header import ProxyHeaderError, parse_header, starts_with_header
from kproxy.runtime.ratelog import RateLimitedLog
from kproxy.runtime.registry import Connection

if TYPE_CHECKING:
    from kproxy.config.proxy_protocol import ProxyProtocolSettings
    from kproxy.runtime.services import ConnectionServices
    from kproxy.session import ProxySession

log = logging.getLogger("kproxy.connection")


class HeaderConnection(Connection, Protocol):
    """A client connection as this module reads it (`kproxy.runtime.client`)."""

    services: ConnectionServices
    session: ProxySession


_refusals = RateLimitedLog(log)


def take_header(conn: HeaderConnection, settings: ProxyProtocolSettings, data: bytes) -> bytes:
    """What follows the header of `conn` (its client's address taken from it), b"" while
    it is not whole yet or when the connection is closed for it."""
    held = conn.preamble
    read = data if not held else held + data
    present = starts_with_header(read)
    if present is None:
        conn.preamble = read
        return b""
    if not present:
        if settings.mode == "required":
            _refuse(conn, "missing", "no PROXY protocol header, and one is required")
            return b""
        conn.preamble = None
        return read if _address_known(conn, None) else b""
    if not settings.trusts(conn.peer_ip):
        _refuse(conn, "untrusted", "a PROXY protocol header from outside trusted_networks")
        return b""
    try:
        header = parse_header(read)
    except ProxyHeaderError as exc:
        _refuse(conn, "malformed", str(exc))
        return b""
    if header is None:
        conn.preamble = read
        return b""
    conn.preamble = None
    if not _address_known(conn, header.source):
        return b""
    return read[header.size :]


def _address_known(conn: HeaderConnection, address: tuple[str, int] | None) -> bool:
    """The client's address from here on (the header's, or the socket's): for the per-IP
    cap (False: over it, the connection closed) and the client's quota."""
    if not conn.services.registry.address_known(conn, address):
        return False
    conn.session.client_host = conn.peer_ip
    return True


def truncated(conn: HeaderConnection) -> None:
    """The client closed before its header was whole."""
    conn.services.observer.proxy_header_error("truncated")
    _refusals.warning(
        "truncated",
        "client %s on %s closed before its PROXY protocol header was whole",
        conn.peer,
        conn.listener,
    )


def _refuse(conn: HeaderConnection, reason: str, why: str) -> None:
    conn.services.observer.proxy_header_error(reason)
    _refusals.warning(reason, "closing client %s on %s: %s", conn.peer, conn.listener, why)
    conn.close(f"proxy_header_{reason}")
