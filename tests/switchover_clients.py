"""Clients that run through a cluster switchover (tests/integration/test_switchover*.py):
confluent-kafka's and Kafka's Java producer and consumer group, what each acknowledged
and read, and kproxy's admin endpoint that starts a switchover."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.peers.kafka_install import ensure_kafka_jars, java_env, java_tool_argv
from tests.peers.net import LOOPBACK, wait_until
from tests.peers.procs import PeerProcess

JAVA_PROGRAM = Path(__file__).resolve().parent / "java" / "SwitchoverClients.java"
JAVA_TRANSACTIONS = Path(__file__).resolve().parent / "java" / "TransactionalProducer.java"


def post_switch(admin_port: int, cluster: str) -> tuple[int, dict[str, Any]]:
    """`POST /switchover?cluster=NAME`: the status and the JSON answer."""
    url = f"http://{LOOPBACK}:{admin_port}/switchover?cluster={cluster}"
    request = urllib.request.Request(url, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def read_topic(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    """Every record of `topic`, read straight from the cluster at `bootstrap`."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "audit", "enable.auto.commit": False}
    )
    try:
        values: list[bytes] = []
        for partition in range(partitions):
            _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)
            consumer.assign([TopicPartition(topic, partition, 0)])
            position = 0
            while position < high:
                message = consumer.poll(5)
                assert message is not None, f"partition {partition}: at {position} of {high}"
                if message.error() is not None:
                    continue
                values.append(bytes(message.value() or b""))
                position = message.offset() + 1
        return values
    finally:
        consumer.close()


def read_committed(bootstrap: str, topic: str, partitions: int) -> list[str]:
    """The committed records of `topic` at `bootstrap` up to its end when called, as a
    read-committed consumer sees them (an open transaction's, and what follows it, not
    yet: then it stops after a second without any)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "audit", "enable.auto.commit": False,
         "isolation.level": "read_committed"}
    )  # fmt: skip
    try:
        ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1]
                for p in range(partitions)]  # fmt: skip
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values: list[str] = []

        def at_end() -> bool:
            at = consumer.position([TopicPartition(topic, p) for p in range(partitions)])
            return all(tp.offset >= end for tp, end in zip(at, ends, strict=True))

        while not at_end() and (message := consumer.poll(1.0)) is not None:
            if message.error() is None and message.offset() < ends[message.partition()]:
                values.append(bytes(message.value() or b"").decode())
        return values
    finally:
        consumer.close()


class PythonClients:
    """A producer and a consumer group (confluent-kafka) through kproxy, on threads."""

    def __init__(
        self, bootstrap: str, topic: str, group: str, prefix: str, idempotent: bool = True
    ) -> None:
        from confluent_kafka import Consumer, Producer

        self.topic, self.prefix = topic, prefix.encode()
        self.acked: list[tuple[float, bytes]] = []
        self.failed: list[str] = []
        self.consumed: list[bytes] = []
        self.producing = threading.Event()
        self.producing.set()
        self.consuming = threading.Event()
        self.consuming.set()
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "client.id": f"{prefix}-producer", "acks": "all",
             "linger.ms": 5,
             "enable.idempotence": idempotent, "message.timeout.ms": 120000}
        )  # fmt: skip
        self.consumer = Consumer(
            {"bootstrap.servers": bootstrap, "client.id": f"{prefix}-consumer",
             "group.id": group, "auto.offset.reset": "earliest",
             "fetch.wait.max.ms": 100, "auto.commit.interval.ms": 500}
        )  # fmt: skip
        self.consumer.subscribe([topic])
        self.threads = [
            threading.Thread(target=self._produce),
            threading.Thread(target=self._consume),
        ]
        for thread in self.threads:
            thread.start()

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked.append((time.monotonic(), bytes(msg.value())))

    def _produce(self) -> None:
        i = 0
        while self.producing.is_set():
            try:
                self.producer.produce(self.topic, b"%s-%d" % (self.prefix, i),
                                      on_delivery=self._delivered)  # fmt: skip
                i += 1
            except BufferError:
                pass
            self.producer.poll(0.002)
        self.producer.flush(60)

    def _consume(self) -> None:
        while self.consuming.is_set():
            message = self.consumer.poll(0.1)
            if message is not None and message.error() is None:
                self.consumed.append(bytes(message.value() or b""))

    def acked_since(self, when: float) -> list[bytes]:
        return [value for at, value in list(self.acked) if at > when]

    def stop_producing(self) -> None:
        self.producing.clear()
        self.threads[0].join(90)

    def close(self) -> None:
        self.producing.clear()
        self.consuming.clear()
        for thread in self.threads:
            thread.join(90)
        self.consumer.close()


class JavaProgram:
    """A single-file Java program of tests/java/ on Kafka's classpath: it prints a line
    per fact (`KIND value`) and ends, printing DONE, once its stop files exist."""

    def __init__(
        self, name: str, program: Path, args: list[str], log_path: Path, stop_files: list[Path],
        heap: str,
    ) -> None:  # fmt: skip
        self.name, self.log_path, self.stop_files = name, log_path, stop_files
        argv = java_tool_argv(
            str(program), *args, lib=ensure_kafka_jars(), heap=heap, log_level="warn"
        )
        self.process = PeerProcess(name, argv, log_path=log_path, env=java_env())
        self.process.start()

    def _text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def lines(self, kind: str) -> list[str]:
        head = f"{kind} "
        return [line[len(head) :] for line in self._text().splitlines() if line.startswith(head)]

    def close(self) -> int | None:
        for stop in self.stop_files:
            stop.touch()
        with contextlib.suppress(TimeoutError):
            wait_until(self._done, 60, what=f"{self.name} to stop")
        # DONE is its last line, not its exit: the JVM may still be shutting down.
        with contextlib.suppress(TimeoutError):
            wait_until(lambda: not self.process.running, 30, what=f"{self.name} to exit")
        return self.process.stop(timeout=10)

    def _done(self) -> bool:
        return not self.process.running or "DONE" in self._text().splitlines()


class JavaClients(JavaProgram):
    """tests/java/SwitchoverClients.java: Kafka's Java producer and consumer group."""

    def __init__(self, workdir: Path, bootstrap: str, topic: str, group: str, prefix: str) -> None:
        self.stop_producing_file = workdir / f"{prefix}.stop-producing"
        stop_consuming_file = workdir / f"{prefix}.stop-consuming"
        args = [bootstrap, topic, group, prefix, str(self.stop_producing_file),
                str(stop_consuming_file)]  # fmt: skip
        super().__init__(f"java-{prefix}", JAVA_PROGRAM, args, workdir / f"{prefix}.out",
                         [self.stop_producing_file, stop_consuming_file], "192m")  # fmt: skip

    @property
    def acked(self) -> list[str]:
        return self.lines("ACKED")

    @property
    def failed(self) -> list[str]:
        return self.lines("FAILED")

    @property
    def consumed(self) -> list[str]:
        return self.lines("CONSUMED")

    def produce_errors(self) -> list[str]:
        """The error of each Produce response the producer logged, in order."""
        return re.findall(r"Got error produce response .*? Error: (\w+)", self._text())

    def stop_producing(self) -> None:
        """Stop the producer; returns once it has flushed and closed."""
        self.stop_producing_file.touch()
        wait_until(lambda: "PRODUCER CLOSED" in self._text(), 150, what="the Java producer")


class JavaTransactions(JavaProgram):
    """tests/java/TransactionalProducer.java: Kafka's Java transactional producer."""

    def __init__(self, workdir: Path, bootstrap: str, topic: str, transactional_id: str) -> None:
        stop_file = workdir / f"{transactional_id}.stop"
        args = [bootstrap, topic, transactional_id, f"{transactional_id}:", "5", str(stop_file)]
        super().__init__(transactional_id, JAVA_TRANSACTIONS, args,
                         workdir / f"{transactional_id}.out", [stop_file], "128m")  # fmt: skip

    @property
    def committed(self) -> list[int]:
        return [int(n) for n in self.lines("COMMITTED")]
