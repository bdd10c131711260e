"""How each client reaches kproxy (TLS with a client certificate, or plaintext), and a
round trip of MESSAGES records through it with confluent-kafka, kafka-python and
aiokafka.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.peers.net import wait_until
from tests.tls_material import TlsMaterial

MESSAGES = 300


class ClientTls:
    """How one client reaches kproxy: TLS with a client certificate, or plaintext."""

    def __init__(self, certs: TlsMaterial, tls: bool) -> None:
        self.tls = tls
        self.ca = certs.proxy_ca_file
        self.pair = certs.client("app") if tls else None

    def confluent(self) -> dict[str, Any]:
        if self.pair is None:
            return {}
        return {
            "security.protocol": "SSL",
            "ssl.ca.location": str(self.ca),
            "ssl.certificate.location": str(self.pair.certificate),
            "ssl.key.location": str(self.pair.key),
            "ssl.endpoint.identification.algorithm": "https",
        }

    def kafka_python(self) -> dict[str, Any]:
        if self.pair is None:
            return {}
        return {
            "security_protocol": "SSL",
            "ssl_cafile": str(self.ca),
            "ssl_certfile": str(self.pair.certificate),
            "ssl_keyfile": str(self.pair.key),
            "ssl_check_hostname": True,
        }

    def aiokafka(self) -> dict[str, Any]:
        if self.pair is None:
            return {}
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.pair.certificate), str(self.pair.key))
        return {"security_protocol": "SSL", "ssl_context": context}

    def java_properties(self, path: Path) -> Path:
        lines = []
        if self.pair is not None:
            settings = {
                "security.protocol": "SSL",
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.ca),
                "ssl.endpoint.identification.algorithm": "https",
                **self.pair.kafka_keystore(""),
            }
            lines = [f"{k}={v}" for k, v in settings.items()]
        path.write_text("\n".join(lines) + "\n")
        return path


def values(count: int, tag: str) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(count)]


def confluent_roundtrip(bootstrap: str, conf: dict[str, Any], topic: str) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **conf})
    for value in values(MESSAGES, topic):
        producer.produce(topic, value)
    assert producer.flush(60) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            **conf,
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        wait_until(lambda: _poll_into(consumer, got), 60, what="confluent to read every message")
    finally:
        consumer.close()
    return got


def _poll_into(consumer: Any, got: list[bytes]) -> bool:
    msg = consumer.poll(0.5)
    if msg is not None and msg.error() is None:
        got.append(msg.value())
    return len(got) >= MESSAGES


def kafka_python_roundtrip(bootstrap: str, conf: dict[str, Any], topic: str) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", **conf)
    for value in values(MESSAGES, topic):
        producer.send(topic, value)
    producer.flush(60)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"g-{topic}",
        auto_offset_reset="earliest",
        consumer_timeout_ms=30_000,
        **conf,
    )
    got = [msg.value for _, msg in zip(range(MESSAGES), consumer, strict=False)]
    consumer.close()
    return got


def aiokafka_roundtrip(bootstrap: str, conf: dict[str, Any], topic: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", **conf)
        await producer.start()
        try:
            for value in values(MESSAGES, topic):
                await producer.send(topic, value)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=f"g-{topic}",
            auto_offset_reset="earliest",
            **conf,
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                async for msg in consumer:
                    got.append(msg.value)
                    if len(got) >= MESSAGES:
                        break
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


CLIENTS: dict[str, Callable[..., list[bytes]]] = {
    "confluent": confluent_roundtrip,
    "kafka-python": kafka_python_roundtrip,
    "aiokafka": aiokafka_roundtrip,
}
