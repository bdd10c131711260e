"""Node mapping on the live path: unmappable ids, moved brokers, stalled readers."""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
from pathlib import Path

import pytest

from tests.kproxy_process import KproxyProcess
from tests.peers.mock_cluster import MockCluster
from tests.peers.net import wait_until

pytestmark = pytest.mark.peers

HOSTS = {f"broker-{i}.cluster.invalid": "127.0.0.1" for i in range(1, 4)}


def metadata_v1(corr: int, topics: int = 0) -> bytes:
    """Metadata v1 asking for `topics` unknown topics of 249 characters (about 250 B each)."""
    cid = b"mapping"
    body = struct.pack(">hhih", 3, 1, corr, len(cid)) + cid + struct.pack(">i", topics)
    for t in range(topics):
        name = (b"t%03d-" % t).ljust(249, b"x")
        body += struct.pack(">h", len(name)) + name
    return struct.pack(">i", len(body)) + body


def test_unmappable_node_is_removed_and_logged(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient

    with MockCluster(brokers=3) as mc:
        mc.create_topic("t", 3, 3)
        mc.advertise_invalid_names()
        # Node 3 is above max_node_id and has no override: kproxy cannot give it a port.
        with KproxyProcess(
            tmp_path,
            mc.bootstraps.split(","),
            cluster={"dial_overrides": HOSTS},
            listeners={"max_node_id": 2},
        ) as kp:
            md = AdminClient({"bootstrap.servers": kp.bootstrap}).list_topics(timeout=20)
            assert sorted(md.brokers) == [1, 2]
            assert all(b.host == "127.0.0.1" for b in md.brokers.values())
            wait_until(lambda: "node 3 has no kproxy port" in kp.log(), 10, what="the log line")
            metrics = kp.metrics_text()
            assert re.search(r'kproxy_endpoints_unmapped_total\{api="Metadata"\} [1-9]', metrics)


class Relay(threading.Thread):
    """A TCP relay to one address that counts the connections it carried."""

    def __init__(self, target: tuple[str, int]) -> None:
        super().__init__(daemon=True)
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.accepted = 0

    def run(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            try:
                upstream = socket.create_connection(self.target)
            except OSError:  # the broker is gone (the test is tearing down): drop this one
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.server.close()


def test_moved_broker_is_dialled_at_its_new_address(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    with MockCluster(brokers=3) as mc:
        mc.create_topic("t", 1, 3)
        mc.set_leader("t", 0, 1)
        ports = mc.broker_ports()
        relay = Relay(("127.0.0.1", ports[1]))
        relay.start()
        mc.advertise_invalid_names()
        # Broker 1's next address is reachable only through the relay.
        overrides: dict[str, str] = dict(HOSTS)
        overrides["moved-1.cluster.invalid:2001"] = f"127.0.0.1:{relay.port}"
        try:
            with KproxyProcess(
                tmp_path, mc.bootstraps.split(","), cluster={"dial_overrides": overrides}
            ) as kp:
                producer = Producer({"bootstrap.servers": kp.bootstrap, "linger.ms": 0})
                producer.produce("t", b"before")
                assert producer.flush(20) == 0
                assert relay.accepted == 0
                mc.set_host_port(1, "moved-1.cluster.invalid", 2001)
                # A new client's Metadata carries the new address through kproxy, which
                # learns it before forwarding: that client's connection to node 1 must be
                # dialled at the new address.
                fresh = Producer({"bootstrap.servers": kp.bootstrap, "linger.ms": 0})
                fresh.produce("t", b"after")
                assert fresh.flush(20) == 0
                assert "node 1 is at moved-1.cluster.invalid:2001" in kp.log()
                assert relay.accepted >= 1
        finally:
            relay.close()


def test_stalled_reader_is_held_by_backpressure(tmp_path: Path) -> None:
    """A client that pipelines requests and never reads: kproxy stops reading from it once
    `max_in_flight_requests` wait for answers, so its memory stays bounded."""
    with (
        MockCluster(brokers=1) as mc,
        KproxyProcess(
            tmp_path,
            mc.bootstraps.split(","),
            limits={"max_in_flight_requests": 50, "write_buffer_high_bytes": 65536},
        ) as kp,
    ):
        assert kp.proc is not None
        status = Path(f"/proc/{kp.proc.pid}/status")

        def rss_kib() -> int:
            return int(re.search(r"VmRSS:\s+(\d+)", status.read_text()).group(1))  # type: ignore[union-attr]

        with socket.create_connection(("127.0.0.1", kp.bootstrap_port)) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(2.0)
            baseline = rss_kib()
            sent = 0
            stalled = False
            # ~15 KB a request: 200,000 of them would be 3 GB, far beyond what the
            # kernel's socket buffers hold, so only kproxy can stop the flow.
            size = len(metadata_v1(0, topics=60))
            while sent < 200_000:
                try:
                    s.sendall(metadata_v1(sent, topics=60))
                except TimeoutError:
                    stalled = True  # 2 s without progress: kproxy stopped reading
                    break
                sent += 1
            assert stalled, f"kproxy kept reading {sent} requests it could not answer"
            assert sent < 5_000, f"{sent} requests of {size} B were taken"
            grown = rss_kib() - baseline
            assert grown < 64 * 1024, f"kproxy grew {grown} KiB for one stalled client"
            # Other clients are served meanwhile.
            with socket.create_connection(("127.0.0.1", kp.bootstrap_port), timeout=10) as ok:
                ok.sendall(metadata_v1(1))
                assert len(ok.recv(4)) == 4


def test_acks_zero_produce_leaves_no_correlation_entry(tmp_path: Path) -> None:
    """Produce with acks=0 has no response: were it kept in the correlation table, a
    connection would stop at `max_in_flight_requests` and the data would never arrive."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    n = 3000
    with (
        MockCluster(brokers=1) as mc,
        KproxyProcess(
            tmp_path, mc.bootstraps.split(","), limits={"max_in_flight_requests": 10}
        ) as kp,
    ):
        mc.create_topic("fire-and-forget", 1, 1)
        producer = Producer(
            {"bootstrap.servers": kp.bootstrap, "acks": 0, "linger.ms": 0, "batch.num.messages": 1}
        )
        for i in range(n):
            producer.produce("fire-and-forget", b"%d" % i)
            producer.poll(0)
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": kp.bootstrap, "group.id": "a0"})
        consumer.assign([TopicPartition("fire-and-forget", 0, 0)])
        got = 0
        idle = 0
        while got < n and idle < 20:
            batch = consumer.consume(1000, 0.5)
            idle = idle + 1 if not batch else 0
            got += sum(1 for m in batch if m.error() is None)
        consumer.close()
        assert got == n
