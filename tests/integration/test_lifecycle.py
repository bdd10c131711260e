"""Process lifecycle: SIGTERM/SIGINT stop accepting, let in-flight requests finish, exit 0."""

from __future__ import annotations

import signal
import socket
import struct
from pathlib import Path

import pytest

from tests.kproxy_process import KproxyProcess
from tests.peers.mock_cluster import MockCluster
from tests.peers.net import port_open, wait_until

pytestmark = pytest.mark.peers


def metadata_v1(corr: int) -> bytes:
    cid = b"lifecycle"
    body = struct.pack(">hhih", 3, 1, corr, len(cid)) + cid + struct.pack(">i", 0)
    return struct.pack(">i", len(body)) + body


def read_frame(sock: socket.socket) -> bytes:
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


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_lets_in_flight_requests_finish(sig: int, tmp_path: Path) -> None:
    with MockCluster(brokers=1) as mc:
        kp = KproxyProcess(tmp_path, mc.bootstraps.split(","), shutdown={"grace_seconds": 10})
        with kp:
            with socket.create_connection(("127.0.0.1", kp.bootstrap_port), timeout=20) as s:
                s.sendall(metadata_v1(1))  # answered at once: the upstream connection is up
                assert struct.unpack(">i", read_frame(s)[:4])[0] == 1
                mc.set_rtt(1, 1500)  # the next answer takes 1.5 s
                mc.start_request_tracking()
                s.sendall(metadata_v1(2))
                wait_until(
                    lambda: any(r.api_key == 3 for r in mc.get_requests()),
                    10,
                    what="the request to reach the broker",
                )
                assert kp.proc is not None
                kp.proc.send_signal(sig)
                # No new connections once stopping has begun...
                wait_until(
                    lambda: not port_open("127.0.0.1", kp.bootstrap_port),
                    10,
                    what="the bootstrap listener to close",
                )
                # ...but the request in flight still gets its answer.
                frame = read_frame(s)
                assert struct.unpack(">i", frame[:4])[0] == 2
            code = kp.proc.wait(20)
            assert code == 0, kp.log()
        log = kp.log()
        assert "stopping" in log
