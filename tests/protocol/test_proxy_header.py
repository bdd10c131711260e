"""The PROXY protocol header parser on vectors written from HAProxy's specification
(proxy-protocol.txt, versions 1 and 2): every address family kproxy takes, every
prefix of a header (not whole yet), what follows a header left alone, and each way a
header can be wrong."""

from __future__ import annotations

import ipaddress
import struct

import pytest

from kproxy.protocol.proxy_header import (
    V2_SIGNATURE,
    ProxyHeader,
    ProxyHeaderError,
    parse_header,
    starts_with_header,
)

KAFKA_REQUEST = struct.pack(">ihhih", 12, 3, 12, 1, 0) + b"\x00\x00"


def v2(command: int, family: int, addresses: bytes, tlvs: bytes = b"") -> bytes:
    """A version 2 header: signature, version 2 and `command`, `family`, length, body."""
    body = addresses + tlvs
    return V2_SIGNATURE + bytes([0x20 | command, family]) + struct.pack(">H", len(body)) + body


def inet(source: str, dest: str, sport: int, dport: int) -> bytes:
    return (
        ipaddress.ip_address(source).packed
        + ipaddress.ip_address(dest).packed
        + struct.pack(">HH", sport, dport)
    )


WHOLE = {
    "v1-tcp4": (b"PROXY TCP4 192.0.2.10 198.51.100.1 56324 9092\r\n", ("192.0.2.10", 56324)),
    "v1-tcp6": (b"PROXY TCP6 2001:db8::10 2001:db8::1 40000 9092\r\n", ("2001:db8::10", 40000)),
    "v1-unknown": (b"PROXY UNKNOWN\r\n", None),
    "v1-unknown-with-addresses": (b"PROXY UNKNOWN ffff:f::1 ffff:f::2 1 2\r\n", None),
    "v1-longest": (
        b"PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
        b"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n",
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 65535),
    ),
    "v2-inet": (
        v2(1, 0x11, inet("192.0.2.10", "198.51.100.1", 56324, 9092)),
        ("192.0.2.10", 56324),
    ),
    "v2-inet6": (v2(1, 0x21, inet("2001:db8::10", "2001:db8::1", 1, 9092)), ("2001:db8::10", 1)),
    "v2-inet-with-tlvs": (
        v2(1, 0x11, inet("10.1.2.3", "10.0.0.1", 5000, 9092), b"\x04\x00\x03abc"),
        ("10.1.2.3", 5000),
    ),
    "v2-local": (v2(0, 0x00, b""), None),
    "v2-local-with-addresses": (v2(0, 0x11, inet("10.1.2.3", "10.0.0.1", 1, 2)), None),
    "v2-unspec": (v2(1, 0x00, b"\x00" * 8), None),
}


@pytest.mark.parametrize("name", WHOLE)
def test_a_whole_header_gives_the_client_and_its_size(name: str) -> None:
    header, source = WHOLE[name]
    assert starts_with_header(header) is True
    assert parse_header(header) == ProxyHeader(len(header), source)
    # What follows it is the connection's own: left where it is.
    assert parse_header(header + KAFKA_REQUEST) == ProxyHeader(len(header), source)


@pytest.mark.parametrize("name", WHOLE)
def test_every_prefix_of_a_header_waits_for_more(name: str) -> None:
    header, _ = WHOLE[name]
    for cut in range(len(header)):
        prefix = header[:cut]
        assert starts_with_header(prefix) in (None, True), cut
        if starts_with_header(prefix):
            assert parse_header(prefix) is None, cut


@pytest.mark.parametrize(
    "first_bytes",
    [
        KAFKA_REQUEST,
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS ClientHello
        b"GET / HTTP/1.1\r\n",
        b"PROXX TCP4",
        b"\r\n\r\n\x00\r\nQUIX\n",
    ],
)
def test_other_first_bytes_are_no_header(first_bytes: bytes) -> None:
    assert starts_with_header(first_bytes) is False


MALFORMED = {
    "v1-no-crlf-within-107-bytes": b"PROXY TCP4 " + b"1" * 100,
    "v1-not-ascii": b"PROXY TCP4 \xff.0.0.1 10.0.0.1 1 2\r\n",
    "v1-bad-protocol": b"PROXY UDP4 10.0.0.1 10.0.0.2 1 2\r\n",
    "v1-missing-port": b"PROXY TCP4 10.0.0.1 10.0.0.2 1\r\n",
    "v1-not-an-address": b"PROXY TCP4 kafka.example 10.0.0.2 1 2\r\n",
    "v1-ipv6-in-tcp4": b"PROXY TCP4 2001:db8::1 10.0.0.2 1 2\r\n",
    "v1-ipv4-in-tcp6": b"PROXY TCP6 10.0.0.1 2001:db8::1 1 2\r\n",
    "v1-port-too-large": b"PROXY TCP4 10.0.0.1 10.0.0.2 65536 2\r\n",
    "v1-negative-port": b"PROXY TCP4 10.0.0.1 10.0.0.2 -1 2\r\n",
    "v1-double-space": b"PROXY TCP4  10.0.0.1 10.0.0.2 1 2\r\n",
    "v2-version-1": V2_SIGNATURE + b"\x11\x11\x00\x0c" + inet("10.0.0.1", "10.0.0.2", 1, 2),
    "v2-command-2": V2_SIGNATURE + b"\x22\x11\x00\x0c" + inet("10.0.0.1", "10.0.0.2", 1, 2),
    "v2-udp": v2(1, 0x12, inet("10.0.0.1", "10.0.0.2", 1, 2)),
    "v2-unix": v2(1, 0x31, b"\x00" * 216),
    "v2-addresses-cut-short": v2(1, 0x21, inet("10.0.0.1", "10.0.0.2", 1, 2)),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_a_malformed_header_is_refused(name: str) -> None:
    with pytest.raises(ProxyHeaderError) as raised:
        parse_header(MALFORMED[name])
    assert raised.value.reason == "proxy_header_malformed"


def test_a_v2_header_waits_for_its_whole_length() -> None:
    """A version 2 header says its length: its TLVs are waited for, never read past."""
    header = v2(1, 0x11, inet("10.1.2.3", "10.0.0.1", 5000, 9092), b"\x04\x00\x10" + b"x" * 16)
    assert parse_header(header[:-1]) is None
    assert parse_header(header) == ProxyHeader(len(header), ("10.1.2.3", 5000))
