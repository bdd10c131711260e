"""Bad input over real sockets: only the offending connection is closed, with a log line,
while a healthy producer keeps producing through the same kproxy."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.healthy_producer import TOPIC, HealthyProducer
from tests.kproxy_process import KproxyProcess
from tests.peers.mock_cluster import ERR_TRANSPORT, MockCluster
from tests.peers.net import wait_until
from tests.raw_kafka import TLS_CLIENT_HELLO, request

pytestmark = pytest.mark.peers

MAX_FRAME = 1 << 20


@pytest.fixture(scope="module")
def setup(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[KproxyProcess, HealthyProducer, MockCluster]]:
    with MockCluster(brokers=3) as mc:
        mc.create_topic(TOPIC, 3, 3)
        tmp: Path = tmp_path_factory.mktemp("bad-input")
        with KproxyProcess(
            tmp, mc.bootstraps.split(","), limits={"max_frame_bytes": MAX_FRAME}
        ) as kp:
            healthy = HealthyProducer(kp.bootstrap)
            healthy.start()
            healthy.keeps_going()
            yield kp, healthy, mc
            healthy.stop_event.set()
            healthy.join(20)


def send_and_expect_close(
    kp: KproxyProcess, data: bytes, close_after: bool = False, reset_ok: bool = False
) -> bytes:
    """Send `data`; return what came back before kproxy closed the connection.

    ``reset_ok``: kproxy refuses a large request from its first bytes and closes with the
    rest unread, so the kernel answers the client with a reset instead of an orderly close.
    """
    received = b""
    with socket.create_connection(("127.0.0.1", kp.bootstrap_port), timeout=10) as s:
        try:
            s.sendall(data)
            if close_after:
                s.shutdown(socket.SHUT_WR)
            while True:
                chunk = s.recv(65536)  # kproxy must close: recv returns b"" (timeout fails)
                if not chunk:
                    return received
                received += chunk
        except ConnectionResetError:
            if not reset_ok:
                raise
            return received


CASES = {
    "garbage": (b"this is not kafka at all, just text\r\n" * 4, "frame_too_large"),
    "negative_length": (b"\xff\xff\xff\xfe" + b"x" * 10, "negative_frame_size"),
    # Only the 4-byte size of an oversized frame: kproxy refuses before buffering a body.
    "oversized_length": (struct.pack(">i", MAX_FRAME + 1), "frame_too_large"),
    "unknown_api_key": (request(999, 0), "unknown_api_key"),
    "unknown_version": (request(3, 99, b"\x00\x00\x00\x00"), "unknown_api_version"),
    # Requests of 64 KiB and more are judged on their first bytes and forwarded as they
    # arrive (cut-through): the same checks hold before any of them reaches the broker.
    "unknown_api_key_large": (request(999, 0, bytes(200_000)), "unknown_api_key"),
    "unknown_version_large": (request(0, 99, bytes(200_000)), "unknown_api_version"),
    "tls_client_hello": (TLS_CLIENT_HELLO, "tls_on_plain_port"),
    "http_request": (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "http_on_kafka_port"),
    "sasl_handshake_v0": (request(17, 0, b"\x00\x05PLAIN"), "sasl_handshake_v0"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_closes_only_its_connection(
    case: str, setup: tuple[KproxyProcess, HealthyProducer, MockCluster]
) -> None:
    kp, healthy, _ = setup
    data, reason = CASES[case]
    logged = kp.log().count(reason)  # another case may have logged the same reason
    assert send_and_expect_close(kp, data, reset_ok=case.endswith("_large")) == b""
    wait_until(lambda: kp.log().count(reason) > logged, 10, what=f"a log line naming {reason}")
    healthy.keeps_going()
    assert kp.proc is not None and kp.proc.poll() is None


def test_truncated_frame_then_close(
    setup: tuple[KproxyProcess, HealthyProducer, MockCluster],
) -> None:
    kp, healthy, _ = setup
    frame = request(3, 1, b"\x00\x00\x00\x00")
    send_and_expect_close(kp, frame[:-3], close_after=True)
    wait_until(lambda: "incomplete frame" in kp.log(), 10, what="a log line on the truncated frame")
    healthy.keeps_going()


def test_broker_vanishes_mid_request(
    setup: tuple[KproxyProcess, HealthyProducer, MockCluster],
) -> None:
    kp, healthy, mc = setup
    # The mock broker drops the connection when it sees the next ListGroups request.
    mc.push_request_errors(16, [ERR_TRANSPORT])
    list_groups_v0 = request(16, 0)
    assert send_and_expect_close(kp, list_groups_v0) == b""
    wait_until(lambda: "in flight" in kp.log(), 10, what="a log line on the lost request")
    healthy.keeps_going()
