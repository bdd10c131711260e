"""The PROXY protocol from a real sender: haproxy in front of kproxy with `send-proxy-v2`
and `send-proxy`, clients connecting to haproxy from other loopback addresses (127.0.0.2,
127.0.0.3). kproxy's per-IP cap and its log lines see each client's own address, not
haproxy's; a client that skips haproxy and sends no header is refused where one is
required, and the served clients notice nothing. The broker is Tansu."""

from __future__ import annotations

import shutil
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.metadata.v12.response import MetadataResponse

from tests.kio_support import decode_response_frame, encode_request_frame
from tests.kproxy_process import KproxyProcess
from tests.peers.net import free_ports, wait_until
from tests.peers.procs import PeerProcess
from tests.peers.tansu import TansuBroker

pytestmark = pytest.mark.peers


@pytest.fixture(scope="module")
def kproxy(tansu: TansuBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KproxyProcess]:
    with KproxyProcess(
        tmp_path_factory.mktemp("kproxy"),
        [tansu.bootstrap],
        listeners={"proxy_protocol": {"mode": "required", "trusted_networks": ["127.0.0.1/32"]}},
        limits={"max_connections_per_client_ip": 1},
    ) as proc:
        yield proc


@pytest.fixture(scope="module")
def haproxy(
    kproxy: KproxyProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, int]]:
    """haproxy's frontends on 127.0.0.1: one sends a v2 header to kproxy, one a v1 line."""
    exe = shutil.which("haproxy")
    if exe is None:
        pytest.skip("haproxy is not installed (bash .ci/install.sh)")
    tmp = tmp_path_factory.mktemp("haproxy")
    v2_port, v1_port = free_ports(2)
    config = tmp / "haproxy.cfg"
    config.write_text(
        "global\n    maxconn 100\n"
        "defaults\n    mode tcp\n    timeout connect 5s\n    timeout client 30s\n"
        "    timeout server 30s\n"
        f"listen v2\n    bind 127.0.0.1:{v2_port}\n"
        f"    server kproxy 127.0.0.1:{kproxy.bootstrap_port} send-proxy-v2\n"
        f"listen v1\n    bind 127.0.0.1:{v1_port}\n"
        f"    server kproxy 127.0.0.1:{kproxy.bootstrap_port} send-proxy\n"
    )
    proc = PeerProcess("haproxy", [exe, "-db", "-f", str(config)], log_path=tmp / "haproxy.log")
    proc.start()
    try:
        # Polled without connecting: a probe through haproxy would reach kproxy as a
        # client of 127.0.0.1 with a header of its own, and take that address's one slot.
        wait_until(lambda: {v2_port, v1_port} <= listening_ports(), 15, what="haproxy")
        yield {"v2": v2_port, "v1": v1_port}
    finally:
        proc.stop(timeout=5)


def listening_ports() -> set[int]:
    """The TCP ports something listens on over IPv4 (/proc/net/tcp, state 0A)."""
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A":
            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def connect(port: int, source: str) -> socket.socket:
    """A client connection to 127.0.0.1:`port` from the loopback address `source`."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    return sock


def metadata(sock: socket.socket, corr: int) -> MetadataResponse | None:
    """One Metadata round trip; None when kproxy closed the connection instead."""
    request = MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    sock.sendall(encode_request_frame(request, corr, "behind-haproxy"))
    head = _read(sock, 4)
    if head is None:
        return None
    body = _read(sock, struct.unpack(">i", head)[0])
    assert body is not None
    got_corr, msg = decode_response_frame(MetadataResponse, head + body)
    assert got_corr == corr
    return msg


def _read(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_kproxy_sees_each_client_behind_haproxy(
    kproxy: KproxyProcess, haproxy: dict[str, int], version: str
) -> None:
    port = haproxy[version]
    refusals = kproxy.metric("kproxy_connections_refused_total", reason="client_ip_limit")
    first = connect(port, "127.0.0.2")
    try:
        answer = metadata(first, 1)
        assert answer is not None and answer.brokers
        # The same client again: over its cap of one, though haproxy's own address is
        # the one kproxy's socket sees for every client.
        second = connect(port, "127.0.0.2")
        assert metadata(second, 2) is None
        second.close()
        wait_until(
            lambda: (
                kproxy.metric("kproxy_connections_refused_total", reason="client_ip_limit")
                == refusals + 1
            ),
            10,
            what="the second connection of 127.0.0.2 refused",
        )
        # Another client behind the same haproxy is served, and so is the first still.
        other = connect(port, "127.0.0.3")
        assert metadata(other, 3) is not None
        other.close()
        assert metadata(first, 4) is not None
    finally:
        first.close()
    # The log names the client behind haproxy, never haproxy (a warning a flood would
    # repeat is written once per 10 s: the other version's refusal may be the one logged).
    lines = [line for line in kproxy.log().splitlines() if "refusing client" in line]
    assert lines and all("refusing client 127.0.0.2:" in line for line in lines), lines


def test_a_client_that_skips_the_balancer_is_refused(
    kproxy: KproxyProcess, haproxy: dict[str, int]
) -> None:
    """Straight to kproxy, with no header: closed, counted, and logged."""
    before = kproxy.metric("kproxy_proxy_protocol_errors_total", reason="missing")
    direct = connect(kproxy.bootstrap_port, "127.0.0.4")
    assert metadata(direct, 1) is None
    direct.close()
    wait_until(
        lambda: kproxy.metric("kproxy_proxy_protocol_errors_total", reason="missing") == before + 1,
        10,
        what="the missing header counted",
    )
    assert "no PROXY protocol header, and one is required" in kproxy.log()


def test_a_header_from_an_untrusted_address_is_refused(
    kproxy: KproxyProcess, haproxy: dict[str, int]
) -> None:
    """Only 127.0.0.1 (haproxy) is trusted: a client that forges a header itself is not."""
    forger = connect(kproxy.bootstrap_port, "127.0.0.5")
    forger.sendall(b"PROXY TCP4 192.0.2.1 127.0.0.1 1111 9092\r\n")
    assert metadata(forger, 1) is None
    forger.close()
    wait_until(
        lambda: kproxy.metric("kproxy_proxy_protocol_errors_total", reason="untrusted") >= 1,
        10,
        what="the untrusted header counted",
    )
    assert "a PROXY protocol header from outside trusted_networks" in kproxy.log()


def test_bad_headers_leave_the_served_clients_alone(
    kproxy: KproxyProcess, haproxy: dict[str, int], tmp_path: Path
) -> None:
    served = connect(haproxy["v2"], "127.0.0.6")
    try:
        assert metadata(served, 1) is not None
        for garbage in (b"PROXY TCP4 x y z w\r\n", b"\r\n\r\n\x00\r\nQUIT\n\x99\x11\x00\x00"):
            bad = connect(kproxy.bootstrap_port, "127.0.0.1")  # trusted, but malformed
            bad.sendall(garbage)
            assert metadata(bad, 2) is None
            bad.close()
        truncated = connect(kproxy.bootstrap_port, "127.0.0.1")
        truncated.sendall(b"PROXY TCP4 192.0.2")
        truncated.close()
        wait_until(
            lambda: kproxy.metric("kproxy_proxy_protocol_errors_total", reason="truncated") >= 1,
            10,
            what="the truncated header counted",
        )
        assert kproxy.metric("kproxy_proxy_protocol_errors_total", reason="malformed") >= 2
        assert metadata(served, 3) is not None
    finally:
        served.close()
