"""Process lifecycle: SIGTERM/SIGINT stop accepting, let in-flight requests finish, exit 0."""

from __future__ import annotations

import signal
import socket
import struct
import time
from pathlib import Path

import pytest

from tests.kproxy_process import KproxyProcess
from tests.peers.mock_cluster import MockCluster
from tests.peers.net import port_open, wait_until
from tests.raw_kafka import metadata_v1, read_frame

pytestmark = pytest.mark.peers


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


def test_drain_with_idle_consumers_ends_well_before_the_grace_period(tmp_path: Path) -> None:
    """A consumer always has a Fetch in flight: kproxy stops reading new requests,
    lets each long poll be answered, closes between responses and exits, without
    waiting out the grace period; what was produced before was all consumed."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    with MockCluster(brokers=3) as mc:
        mc.create_topic("drain", 3, 3)
        kp = KproxyProcess(tmp_path, mc.bootstraps.split(","), shutdown={"grace_seconds": 60})
        with kp:
            producer = Producer({"bootstrap.servers": kp.bootstrap, "enable.idempotence": True})
            for i in range(500):
                producer.produce("drain", b"%d" % i)
            assert producer.flush(30) == 0
            consumers = []
            consumed: set[bytes] = set()
            for n in range(2):
                c = Consumer(
                    {
                        "bootstrap.servers": kp.bootstrap,
                        "group.id": f"drain-{n}",
                        "auto.offset.reset": "earliest",
                        "fetch.wait.max.ms": 500,
                        "enable.auto.commit": False,
                    }
                )
                # Assigned, not subscribed: no group to join or leave, only fetches.
                c.assign([TopicPartition("drain", p, OFFSET_BEGINNING) for p in range(3)])
                consumers.append(c)

            def poll_all() -> bool:
                for c in consumers:
                    for msg in c.consume(num_messages=500, timeout=0.2):
                        if msg.error() is None and c is consumers[0]:
                            consumed.add(msg.value())
                return len(consumed) == 500

            wait_until(poll_all, 60, what="the first consumer to read all 500 messages")
            for _ in range(10):  # idle now: both keep a long-poll Fetch in flight
                poll_all()
            assert kp.proc is not None
            started = time.monotonic()
            kp.proc.send_signal(signal.SIGTERM)
            for c in consumers:  # the clients keep polling while kproxy drains
                c.poll(0.2)
            code = kp.proc.wait(30)
            took = time.monotonic() - started
            for c in consumers:
                c.close()
            producer.flush(1)
            assert code == 0, kp.log()
            assert took < 10, f"drain took {took:.1f}s of a 60 s grace period"
        assert len(consumed) == 500


def test_second_signal_exits_at_once(tmp_path: Path) -> None:
    with MockCluster(brokers=1) as mc:
        kp = KproxyProcess(tmp_path, mc.bootstraps.split(","), shutdown={"grace_seconds": 60})
        with kp, socket.create_connection(("127.0.0.1", kp.bootstrap_port), timeout=20) as s:
            s.sendall(metadata_v1(1))
            read_frame(s)
            mc.set_rtt(1, 30_000)  # the next answer would take 30 s
            mc.start_request_tracking()
            s.sendall(metadata_v1(2))
            assert kp.proc is not None
            wait_until(
                lambda: any(r.api_key == 3 for r in mc.get_requests()),
                10,
                what="the request to reach the broker",
            )
            kp.proc.send_signal(signal.SIGTERM)
            wait_until(lambda: "stopping" in kp.log(), 10, what="kproxy to start draining")
            started = time.monotonic()
            kp.proc.send_signal(signal.SIGTERM)
            code = kp.proc.wait(20)
            assert code == 0, kp.log()
            assert time.monotonic() - started < 5
            assert "second stop signal" in kp.log()
            mc.set_rtt(1, 0)


def test_a_started_kproxy_used_as_a_context_is_the_one_stopped(tmp_path: Path) -> None:
    """`with kp.start(nofile=...)` (the hardening tests' form) runs one kproxy and stops
    it at the end of the block: none is left behind."""
    from tests.peers.net import free_port

    kp = KproxyProcess(tmp_path, [f"127.0.0.1:{free_port()}"])
    running = kp.start()  # what `with kp.start():` does, in two steps to see the process
    started = kp.proc
    assert started is not None
    with running:
        assert kp.proc is started
    assert started.poll() is not None, f"kproxy {started.pid} still runs after its block"
