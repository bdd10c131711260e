"""Creating and deleting a topic as clients' admin APIs do, through any bootstrap (a
kproxy listener or the brokers), and what each call came back with."""

from __future__ import annotations

import subprocess
from typing import Any

from tests.peers.kafka_cluster import KafkaCluster

MAIN_TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"  # bin/kafka-topics.sh


def create_topic_error(bootstrap: str, topic: str) -> object:
    """confluent-kafka's CreateTopics: None on success, else the KafkaError."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(topic, 1, 1)], request_timeout=30)[topic]
    return _error(future)


def java_create_topic(
    kafka: KafkaCluster, bootstrap: str, topic: str, *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """kafka-topics.sh --create: the Java AdminClient's CreateTopics."""
    return kafka.java_tool(
        MAIN_TOPIC_COMMAND,
        "--bootstrap-server", bootstrap,
        "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1",
        check=check, timeout=120,
    )  # fmt: skip


def delete_topic_error(bootstrap: str, topic: str) -> object:
    """confluent-kafka's DeleteTopics: None on success, else the KafkaError."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    return _error(admin.delete_topics([topic], request_timeout=30)[topic])


def _error(future: Any) -> object:
    """The KafkaError a confluent-kafka admin future failed with, or None. Read by
    exception(), never raised: a raised error's traceback ties the future to this
    frame's AdminClient in a cycle, and the collector may break it on a librdkafka
    thread, where destroying the client crashes the interpreter."""
    error = future.exception(60)
    return None if error is None else error.args[0]


def topics(kafka: KafkaCluster) -> set[str]:
    """Topic names, asked of the brokers directly."""
    return set(kafka.admin().list_topics(timeout=30).topics)
