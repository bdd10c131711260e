"""Limits that hold against hostile and broken clients, over real sockets.

kproxy runs as a process in front of librdkafka's mock cluster; a healthy producer goes
on through the same kproxy while the attacks run, and must lose nothing.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.healthy_producer import TOPIC, HealthyProducer
from tests.kproxy_process import KproxyProcess
from tests.peers.mock_cluster import MockCluster
from tests.peers.net import wait_until
from tests.raw_kafka import (
    TLS_CLIENT_HELLO,
    add_raft_voter_of_size,
    broker_registration_of_size,
    closed_by_peer,
    metadata_v1,
    read_frame,
    request,
)

pytestmark = pytest.mark.peers

MAX_FRAME = 64 << 20
METADATA_V1 = metadata_v1(7)


def established_to(ports: set[int]) -> int:
    """TCP connections on this machine established to one of `ports` (/proc/net/tcp)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote_port = int(fields[2].split(":")[1], 16)
        if fields[3] == "01" and remote_port in ports:
            count += 1
    return count


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as mc:
        mc.create_topic(TOPIC, 3, 3)
        yield mc


@pytest.fixture(scope="module")
def guarded(
    cluster: MockCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[KproxyProcess, HealthyProducer]]:
    """kproxy with every limit set low enough to reach in a test."""
    tmp: Path = tmp_path_factory.mktemp("hardening")
    limits = {
        # The largest frame the configuration allows: detection of TLS and HTTP must not
        # depend on the frame limit.
        "max_frame_bytes": 2**31 - 1,
        "max_connections_per_client_ip": 40,
        "first_request_timeout_seconds": 1.5,
        "idle_timeout_seconds": 3,
    }
    with KproxyProcess(tmp, cluster.bootstraps.split(","), limits=limits) as kp:
        healthy = HealthyProducer(kp.bootstrap)
        healthy.start()
        healthy.keeps_going()
        yield kp, healthy
        healthy.stop_event.set()
        healthy.join(20)
        assert not healthy.failed, healthy.failed[:3]


def test_tls_and_http_are_recognised_at_the_largest_frame_limit(
    guarded: tuple[KproxyProcess, HealthyProducer],
) -> None:
    kp, healthy = guarded
    for data, reason in (
        (TLS_CLIENT_HELLO, "tls_on_plain_port"),
        (b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "http_on_kafka_port"),
    ):
        with socket.create_connection(("127.0.0.1", kp.bootstrap_port)) as s:
            s.sendall(data)
            assert closed_by_peer(s), reason
        assert kp.metric("kproxy_frame_errors_total", reason=reason) >= 1
    healthy.keeps_going()


@pytest.mark.parametrize("mib", [2, 8, 32])
def test_controller_plane_attack_frames_cost_next_to_nothing(
    mib: int, guarded: tuple[KproxyProcess, HealthyProducer]
) -> None:
    """A BrokerRegistration of ~300,000 tiny listeners per 2 MiB used to cost +88 MB and
    freeze every client for 9.5 s; now it is refused from its first bytes."""
    kp, healthy = guarded
    frame = broker_registration_of_size(mib << 20)
    cpu, rss = kp.cpu_seconds(), kp.rss_bytes()
    refused = kp.metric("kproxy_frame_errors_total", reason="api_not_allowed")
    with socket.create_connection(("127.0.0.1", kp.bootstrap_port)) as s:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(frame)  # kproxy refuses it before the rest is read
        assert closed_by_peer(s)
    wait_until(
        lambda: kp.metric("kproxy_frame_errors_total", reason="api_not_allowed") > refused,
        10,
        what="the refusal counted",
    )
    # Generous bounds (a shared 2-core machine): the frame was never gathered or walked.
    assert kp.cpu_seconds() - cpu < 1.0 + mib * 0.05
    assert kp.rss_bytes() - rss < 16 << 20
    assert "BrokerRegistration" in kp.log()
    healthy.keeps_going()


@pytest.mark.parametrize("mib", [2, 8, 32])
def test_walker_caps_bound_what_a_walked_request_costs(
    mib: int, guarded: tuple[KproxyProcess, HealthyProducer]
) -> None:
    """AddRaftVoter is served on client listeners (admin clients send it), so it is
    gathered and walked: the walk stops at the endpoint cap (1,024 listeners)."""
    kp, healthy = guarded
    frame = add_raft_voter_of_size(mib << 20)
    cpu, peak = kp.cpu_seconds(), kp.rss_bytes("VmHWM")
    capped = kp.metric("kproxy_frame_errors_total", reason="too_many_endpoints")
    with socket.create_connection(("127.0.0.1", kp.bootstrap_port)) as s:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(frame)
        assert closed_by_peer(s)
    wait_until(
        lambda: kp.metric("kproxy_frame_errors_total", reason="too_many_endpoints") > capped,
        10,
        what="the cap counted",
    )
    # Gathered once and joined once: memory within a small multiple of the frame, and
    # a walk that stops at the cap costs next to no CPU (generous bounds, shared machine).
    assert kp.rss_bytes("VmHWM") - peak < 3 * (mib << 20) + (16 << 20)
    assert kp.cpu_seconds() - cpu < 1.0 + mib * 0.05
    healthy.keeps_going()


@pytest.mark.parametrize(
    ("name", "api_key"),
    [("Vote", 52), ("BeginQuorumEpoch", 53), ("FetchSnapshot", 59), ("UpdateRaftVoter", 82)],
)
def test_controller_plane_requests_are_refused(
    name: str, api_key: int, guarded: tuple[KproxyProcess, HealthyProducer]
) -> None:
    kp, healthy = guarded
    with socket.create_connection(("127.0.0.1", kp.bootstrap_port)) as s:
        s.sendall(request(api_key, 0, bytes(64)))
        assert closed_by_peer(s)
    wait_until(lambda: name in kp.log(), 10, what=f"a log line naming {name}")
    healthy.keeps_going()


def test_connection_cap_refuses_past_it(cluster: MockCluster, tmp_path: Path) -> None:
    with KproxyProcess(
        tmp_path, cluster.bootstraps.split(","), limits={"max_connections": 5}
    ) as kp:
        held = [socket.create_connection(("127.0.0.1", kp.bootstrap_port)) for _ in range(5)]
        try:
            for s in held:
                s.sendall(METADATA_V1)
                read_frame(s)
            for _ in range(30):
                with socket.create_connection(("127.0.0.1", kp.bootstrap_port)) as extra:
                    assert closed_by_peer(extra)
            refused = kp.metric("kproxy_connections_refused_total", reason="connection_limit")
            assert refused == 30
            assert kp.log().count("refusing client") == 1
        finally:
            for s in held:
                s.close()


def test_pipelined_requests_wait_for_in_flight_slots(cluster: MockCluster, tmp_path: Path) -> None:
    """With max_in_flight_requests 1 and a broker slow to answer, 2,000 pipelined
    requests are forwarded one at a time, and every one is answered in order."""
    with KproxyProcess(
        tmp_path, cluster.bootstraps.split(","), limits={"max_in_flight_requests": 1}
    ) as kp:
        cluster.set_rtt(-1, 300)
        try:
            with socket.create_connection(("127.0.0.1", kp.bootstrap_port), timeout=30) as s:
                s.sendall(b"".join(metadata_v1(corr) for corr in range(1, 2001)))
                wait_until(
                    lambda: kp.metric("kproxy_requests_held_total") > 0, 10, what="requests held"
                )
                forwarded = kp.metric("kproxy_frames_total", api="Metadata", direction="request")
                assert forwarded <= 2  # one in flight (and kproxy's own discovery at most)
                assert "more wait, reading paused" in kp.log()
                cluster.set_rtt(-1, 0)
                answered = [struct.unpack_from(">i", read_frame(s))[0] for _ in range(2000)]
            assert answered == list(range(1, 2001))
            # Every request forwarded is counted, those that waited for a slot too.
            sent = kp.metric("kproxy_frames_total", api="Metadata", direction="request")
            assert sent >= 2000
        finally:
            cluster.set_rtt(-1, 0)


def test_per_ip_cap_refuses_only_that_ip(guarded: tuple[KproxyProcess, HealthyProducer]) -> None:
    kp, healthy = guarded
    before = kp.metric("kproxy_connections_refused_total", reason="client_ip_limit")
    held: list[socket.socket] = []
    try:
        for _ in range(40):  # the healthy producer already holds some from 127.0.0.1
            s = socket.create_connection(("127.0.0.1", kp.bootstrap_port))
            s.sendall(METADATA_V1)
            held.append(s)
        wait_until(
            lambda: (
                kp.metric("kproxy_connections_refused_total", reason="client_ip_limit") > before
            ),
            10,
            what="refusals past the per-IP cap",
        )
        # Another address (the client binds 127.0.0.2) is under its own cap.
        other = socket.create_connection(
            ("127.0.0.1", kp.bootstrap_port), source_address=("127.0.0.2", 0)
        )
        with other:
            other.sendall(METADATA_V1)
            assert struct.unpack_from(">i", read_frame(other))[0] == 7
    finally:
        for s in held:
            s.close()
    lines = kp.log().count("refusing client")
    assert 1 <= lines <= 2  # one line per 10 s, however many refusals
    healthy.keeps_going()


def test_silent_clients_never_reach_the_broker_and_are_closed(
    guarded: tuple[KproxyProcess, HealthyProducer],
) -> None:
    kp, healthy = guarded
    broker_ports = set(cluster_ports(kp))
    before = kp.metric("kproxy_connections_closed_total", cause="first_request_timeout")
    to_brokers = established_to(broker_ports)
    slow = [socket.create_connection(("127.0.0.1", kp.bootstrap_port)) for _ in range(20)]
    try:
        for s in slow:
            s.sendall(b"\x00\x00")  # half a size prefix, then nothing
        # Twenty clients connected: no broker connection was made for them.
        assert established_to(broker_ports) - to_brokers <= 2
        assert all(closed_by_peer(s, 10) for s in slow)
    finally:
        for s in slow:
            s.close()
    closed = kp.metric("kproxy_connections_closed_total", cause="first_request_timeout")
    assert closed - before == 20
    healthy.keeps_going()


def cluster_ports(kp: KproxyProcess) -> list[int]:
    """The ports kproxy dials the brokers at (its /topology)."""
    return [int(node["dial"].rsplit(":", 1)[1]) for node in kp.topology()["nodes"]]


def test_idle_connection_is_closed(guarded: tuple[KproxyProcess, HealthyProducer]) -> None:
    kp, healthy = guarded
    idle = {"listener": "bootstrap", "cause": "idle_timeout"}
    before = kp.metric("kproxy_connections_closed_total", **idle)
    with socket.create_connection(("127.0.0.1", kp.bootstrap_port)) as s:
        s.sendall(METADATA_V1)
        read_frame(s)
        started = time.monotonic()
        assert closed_by_peer(s, 15)
        assert time.monotonic() - started >= 2.5  # not before the timeout (3 s)
    # The bootstrap listener's count: the healthy producer's own idle connections to the
    # brokers' listeners may be closed meanwhile too.
    assert kp.metric("kproxy_connections_closed_total", **idle) == before + 1
    healthy.keeps_going()


def test_connection_cap_and_descriptor_exhaustion(cluster: MockCluster, tmp_path: Path) -> None:
    """With 128 descriptors kproxy serves (128 - 64) / 2 = 32 connections; the rest are
    refused at once, counted and logged once, and kproxy serves again when they go."""
    kp = KproxyProcess(tmp_path, cluster.bootstraps.split(","))
    with kp.start(nofile=128):
        held: list[socket.socket] = []
        try:
            for _ in range(60):
                s = socket.create_connection(("127.0.0.1", kp.bootstrap_port))
                s.sendall(METADATA_V1)
                held.append(s)
            wait_until(
                lambda: (
                    kp.metric("kproxy_connections_refused_total", reason="descriptor_limit") >= 20
                ),
                10,
                what="refusals at the descriptor limit",
            )
            assert kp.log().count("refusing client") <= 2
        finally:
            for s in held:
                s.close()
        wait_until(
            lambda: kp.metric("kproxy_connections_active") == 0, 10, what="connections closed"
        )
        with socket.create_connection(("127.0.0.1", kp.bootstrap_port), timeout=10) as s:
            s.sendall(METADATA_V1)
            assert struct.unpack_from(">i", read_frame(s))[0] == 7


def test_admin_topology_off_and_half_sent_requests_closed(
    cluster: MockCluster, tmp_path: Path
) -> None:
    admin = {"topology": False, "request_timeout_seconds": 1}
    with KproxyProcess(tmp_path, cluster.bootstraps.split(","), admin=admin) as kp:
        assert kp.admin_get("/topology")[0] == 404
        assert kp.admin_get("/metrics")[0] == 200
        with socket.create_connection(("127.0.0.1", kp.admin_port)) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never finished
            started = time.monotonic()
            assert closed_by_peer(s, 10)
            assert time.monotonic() - started < 5


def test_emfile_on_accept_is_counted_and_kproxy_recovers(
    cluster: MockCluster, tmp_path: Path
) -> None:
    """Told it may hold more connections than it has descriptors for, kproxy runs out:
    the standard loop reports each refused accept, kproxy counts and logs it (once per
    10 s), and serves again as soon as descriptors are free."""
    kp = KproxyProcess(
        tmp_path,
        cluster.bootstraps.split(","),
        limits={"max_connections": 1000},
        runtime={"event_loop": "asyncio"},
    )
    with kp.start(nofile=96):
        held: list[socket.socket] = []
        try:
            for _ in range(120):
                s = socket.create_connection(("127.0.0.1", kp.bootstrap_port))
                held.append(s)
            # The admin server has no descriptor to answer with either: read the log.
            wait_until(
                lambda: "open-file limit reached" in kp.log(), 10, what="a refused accept logged"
            )
        finally:
            for s in held:
                s.close()
        wait_until(
            lambda: kp.metric("kproxy_connections_active") == 0, 15, what="connections closed"
        )
        assert kp.metric("kproxy_accept_errors_total", reason="fd_exhausted") > 0
        assert kp.log().count("open-file limit reached") <= 2

        def served() -> bool:
            with socket.create_connection(("127.0.0.1", kp.bootstrap_port), timeout=10) as s:
                s.sendall(METADATA_V1)
                return struct.unpack_from(">i", read_frame(s))[0] == 7

        wait_until(served, 15, what="kproxy to serve again")
