"""Data path through kproxy in front of a storing broker (Tansu), with four real clients.

Each client produces 100,000 messages through kproxy and reads them back through
kproxy; every key and value must come back byte for byte.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kproxy_process import KproxyProcess
from tests.peers.kcat import kcat_cmd
from tests.peers.net import wait_until
from tests.peers.tansu import TansuBroker

pytestmark = pytest.mark.peers

N = 100_000
PARTITIONS = 3


def message(i: int) -> tuple[bytes, bytes]:
    """Deterministic, varied payloads: sizes 1..300 bytes, every byte value."""
    key = b"k%06d" % i
    size = 1 + (i * 7919) % 300
    value = bytes((i + j) % 256 for j in range(size)) if i % 2 else (b"v%d-" % i) * (size // 8 + 1)
    return key, value


def expected(n: int = N) -> dict[bytes, bytes]:
    return dict(message(i) for i in range(n))


@pytest.fixture(scope="module")
def kproxy(tansu: TansuBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KproxyProcess]:
    with KproxyProcess(tmp_path_factory.mktemp("kproxy"), [tansu.bootstrap]) as proc:
        yield proc


def create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    futures[topic].result(30)


def assert_exact(got: dict[bytes, bytes], duplicates: int) -> None:
    want = expected()
    missing = want.keys() - got.keys()
    wrong = [k for k in want.keys() & got.keys() if got[k] != want[k]]
    assert not missing, f"{len(missing)} messages missing, e.g. {sorted(missing)[:3]}"
    assert not wrong, f"{len(wrong)} values differ, e.g. {wrong[:3]}"
    assert len(got) == N and duplicates == 0


def test_confluent_kafka(kproxy: KproxyProcess) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = "dp-confluent"
    create_topic(kproxy.bootstrap, topic)
    producer = Producer({"bootstrap.servers": kproxy.bootstrap, "linger.ms": 10, "acks": "all"})
    errors: list[object] = []
    for i in range(N):
        key, value = message(i)
        while True:
            try:
                producer.produce(
                    topic, value, key, on_delivery=lambda e, _m: e is not None and errors.append(e)
                )
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(60) == 0 and not errors, errors[:3]

    consumer = Consumer(
        {
            "bootstrap.servers": kproxy.bootstrap,
            "group.id": "dp-confluent",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: dict[bytes, bytes] = {}
    dup = 0
    idle = 0
    while len(got) < N and idle < 100:
        batch = consumer.consume(10_000, 0.5)
        idle = idle + 1 if not batch else 0
        for m in batch:
            assert m.error() is None, m.error()
            dup += m.key() in got
            got[m.key()] = m.value()
    consumer.close()
    assert_exact(got, dup)


def test_kafka_python(kproxy: KproxyProcess) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = "dp-kafka-python"
    create_topic(kproxy.bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=kproxy.bootstrap, linger_ms=10, acks="all")
    futures = [producer.send(topic, key=k, value=v) for k, v in (message(i) for i in range(N))]
    producer.flush(120)
    for f in futures[-10:]:
        f.get(30)
    assert all(f.succeeded() for f in futures)
    producer.close()

    consumer = KafkaConsumer(
        bootstrap_servers=kproxy.bootstrap, enable_auto_commit=False, group_id=None
    )
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    got: dict[bytes, bytes] = {}
    dup = 0
    idle = 0
    while len(got) < N and idle < 20:
        polled = consumer.poll(1000, max_records=10_000)
        idle = idle + 1 if not polled else 0
        for records in polled.values():
            for r in records:
                dup += r.key in got
                got[r.key] = r.value
    consumer.close()
    assert_exact(got, dup)


def test_aiokafka(kproxy: KproxyProcess) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    topic = "dp-aiokafka"
    create_topic(kproxy.bootstrap, topic)

    async def run() -> tuple[dict[bytes, bytes], int]:
        producer = AIOKafkaProducer(bootstrap_servers=kproxy.bootstrap, linger_ms=10, acks="all")
        await producer.start()
        try:
            batch = []
            for i in range(N):
                k, v = message(i)
                batch.append(await producer.send(topic, key=k, value=v))
            await producer.flush()
            for fut in batch:
                await fut
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=kproxy.bootstrap, enable_auto_commit=False, group_id=None
        )
        await consumer.start()
        got: dict[bytes, bytes] = {}
        dup = 0
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            await consumer.seek_to_beginning()
            idle = 0
            while len(got) < N and idle < 20:
                polled = await consumer.getmany(timeout_ms=1000, max_records=10_000)
                idle = idle + 1 if not polled else 0
                for records in polled.values():
                    for r in records:
                        assert r.key is not None and r.value is not None
                        dup += r.key in got
                        got[r.key] = r.value
        finally:
            await consumer.stop()
        return got, dup

    got, dup = asyncio.run(run())
    assert_exact(got, dup)


def test_kcat(kproxy: KproxyProcess, tmp_path: Path) -> None:
    topic = "dp-kcat"
    create_topic(kproxy.bootstrap, topic)
    cmd, env = kcat_cmd()
    # kcat's line format: hex keeps every byte value printable and delimiter-free.
    lines = b"".join(message(i)[0] + b"\t" + message(i)[1].hex().encode() + b"\n" for i in range(N))
    produce = subprocess.run(
        [*cmd, "-b", kproxy.bootstrap, "-P", "-t", topic, "-K", "\t", "-X", "linger.ms=10"],
        input=lines,
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert produce.returncode == 0, produce.stderr.decode()
    consume = subprocess.run(
        [
            *cmd,
            "-b",
            kproxy.bootstrap,
            "-C",
            "-t",
            topic,
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%k\t%s\n",
        ],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert consume.returncode == 0, consume.stderr.decode()
    got: dict[bytes, bytes] = {}
    dup = 0
    for line in consume.stdout.splitlines():
        key, _, hexval = line.partition(b"\t")
        dup += key in got
        got[key] = bytes.fromhex(hexval.decode())
    assert_exact(got, dup)


def test_large_produce_requests_pass_through_whole(kproxy: KproxyProcess) -> None:
    """Produce requests of 64 KiB to 1 MB are forwarded as they arrive (cut-through,
    kproxy/session): every byte must still reach the broker once, in order."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = "dp-large"
    create_topic(kproxy.bootstrap, topic)
    sizes = [70_000 + (i * 104_729) % 830_000 for i in range(60)]
    values = {
        b"big%03d" % i: bytes((i * 31 + j) % 251 for j in range(n)) for i, n in enumerate(sizes)
    }
    producer = Producer({"bootstrap.servers": kproxy.bootstrap, "linger.ms": 5, "acks": "all"})
    errors: list[object] = []
    for key, value in values.items():
        producer.produce(
            topic, value, key, on_delivery=lambda e, _m: e is not None and errors.append(e)
        )
        producer.poll(0)
    assert producer.flush(60) == 0 and not errors, errors[:3]

    consumer = Consumer({"bootstrap.servers": kproxy.bootstrap, "group.id": "dp-large",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: dict[bytes, bytes] = {}
    idle = 0
    while len(got) < len(values) and idle < 100:
        batch = consumer.consume(100, 0.5)
        idle = idle + 1 if not batch else 0
        for m in batch:
            assert m.error() is None, m.error()
            got[m.key()] = m.value()
    consumer.close()
    assert got.keys() == values.keys()
    assert [k for k in values if got[k] != values[k]] == []


def test_the_running_build_is_reported(kproxy: KproxyProcess) -> None:
    """`kproxy_build_info` and the start-up log say which build carried the data above:
    pure Python here, compiled when tests/project/test_compiled_build.py runs this module
    against the mypyc build (the process imports the same kproxy this test does)."""
    from kproxy.observe.build_info import hot_path_build

    build = hot_path_build()
    assert build in ("python", "compiled")
    labels = {"hot_path": build, "event_loop": "uvloop"}  # runtime.event_loop: auto
    assert kproxy.metric("kproxy_build_info", **labels) == 1
    # Logged as kproxy starts listening: polled, the port may open a moment before.
    wait_until(lambda: f"hot path {build}, event loop uvloop" in kproxy.log(), 10, what="log")


def test_large_messages_at_one_request_in_flight(
    tansu: TansuBroker, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`limits.max_in_flight_requests: 1` and a producer of 300 KB messages: each
    Produce request takes the only slot as its first bytes arrive, and kproxy must read
    it to its end before it stops reading the client, or the broker never answers and
    every message times out. Every message is delivered, and kproxy then stops at its
    first SIGTERM."""
    from confluent_kafka import Producer

    workdir = tmp_path_factory.mktemp("kproxy-one")
    one = {"max_in_flight_requests": 1}
    with KproxyProcess(workdir, [tansu.bootstrap], limits=one) as kp:
        topic = "dp-one-in-flight"
        create_topic(kp.bootstrap, topic)
        producer = Producer({"bootstrap.servers": kp.bootstrap, "linger.ms": 5, "acks": "all",
                             "message.timeout.ms": 60_000})  # fmt: skip
        outcomes: list[object] = []
        for i in range(200):
            value = bytes((i + j) % 251 for j in range(300_000))
            producer.produce(
                topic, value, b"k%03d" % i, on_delivery=lambda e, _m: outcomes.append(e)
            )
            producer.poll(0)
        assert producer.flush(90) == 0
        assert outcomes == [None] * 200, [str(e) for e in outcomes if e is not None][:3]
        assert kp.stop() == 0
