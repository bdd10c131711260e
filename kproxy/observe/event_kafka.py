"""The Kafka sink: kproxy's events published to a topic, for a fleet without shared disk.

Each event is one record: the same JSON object a file line holds (no newline), keyed by
`kproxy.observe.events.event_key` (topic-partition for partition events, so one partition's
leadership history stays in order; the proxy's instance otherwise). The client is
confluent-kafka (librdkafka: batching, compression, idempotence, reconnection), in the
`kafka` extra.

It never slows the proxy: `produce` only queues in librdkafka's bounded buffer (sized
like the event queue) and returns at once; when the buffer is full, or an event is not
delivered within `message_timeout_seconds` (the cluster is down), the event is dropped
and counted, as the file sink counts a full disk. A delivery report counts it written.
One WARNING when publishing starts failing, one INFO when it works again: a dead
cluster does not flood the log.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from kproxy.observe.event_sink import EventRecord, SinkReport
from kproxy.protocol.hostport import format_host_port

if TYPE_CHECKING:
    from kproxy.config.events import KafkaSinkSettings

__all__ = ["KafkaSink", "sink_client_id"]

log = logging.getLogger("kproxy.events")

CLIENT_ID_PREFIX: Final = "kproxy-events-"
_TOPIC_CREATE_SECONDS: Final = 30.0
# librdkafka's own log lines: only what it calls critical; failures are reported once
# through error_cb and delivery reports instead of a line per reconnect attempt.
_LIBRDKAFKA_LOG_LEVEL: Final = 2


def sink_client_id(instance: str) -> str:
    """The events producer's client id: the instance plus a random part, so that no
    client can pose as it (kproxy keeps this id out of its redirect metrics)."""
    return f"{CLIENT_ID_PREFIX}{instance}-{secrets.token_hex(4)}"


class KafkaSink:
    """Publishes event records to `settings.topic` with an idempotent producer."""

    name = "kafka"

    def __init__(
        self,
        settings: KafkaSinkSettings,
        client_id: str,
        bootstrap: Callable[[], str],
        *,
        queue_size: int,
    ) -> None:
        """`bootstrap()` names the cluster once the writer thread opens the sink (the
        proxy's own bootstrap listener is only bound by then)."""
        self.settings = settings
        self.client_id = client_id
        self._bootstrap = bootstrap
        self._queue_size = queue_size
        self._report = SinkReport(self.name, None, None)
        self._producer: Any = None
        self._failing = False
        self._state_lock = threading.Lock()
        self._delivered: dict[str, Callable[[Any, Any], None]] = {}

    # -- EventSink -------------------------------------------------------------------------
    def open(self, report: SinkReport) -> None:
        from confluent_kafka import Producer

        self._report = report
        s = self.settings
        config: dict[str, Any] = {
            "bootstrap.servers": self._bootstrap(),
            "client.id": self.client_id,
            "enable.idempotence": True,  # implies acks=all: no duplicates on retry
            "compression.type": "lz4",
            "linger.ms": 100,
            "queue.buffering.max.messages": self._queue_size,
            "message.timeout.ms": int(s.message_timeout_seconds * 1000),
            "error_cb": self._on_error,
            "logger": logging.getLogger("kproxy.events.librdkafka"),
            "log_level": _LIBRDKAFKA_LOG_LEVEL,
        }
        config.update({k: v.get_secret_value() for k, v in s.properties.items()})
        self._producer = Producer(config)
        if s.create_topic:
            self._create_topic(config)
        log.info(
            "event log: publishing to topic %s at %s as %s",
            s.topic,
            config["bootstrap.servers"],
            self.client_id,
        )

    def write(self, records: list[EventRecord]) -> None:
        producer = self._producer
        if producer is None:  # open() failed: nothing can be published
            self._report.dropped(len(records))
            return
        topic = self.settings.topic
        full = 0
        for record in records:
            try:
                producer.produce(
                    topic, record.line, record.key, on_delivery=self._callback(record.type)
                )
            except BufferError:
                full += 1
        if full:
            self._failed(f"{full} event(s) found librdkafka's queue full")
            self._report.dropped(full)
        producer.poll(0)  # serve delivery reports

    def tick(self) -> None:
        if self._producer is not None:
            self._producer.poll(0)

    def flush(self, timeout: float) -> bool:
        if self._producer is None:
            return True
        return int(self._producer.flush(timeout)) == 0

    def close(self, timeout: float) -> None:
        producer, self._producer = self._producer, None
        if producer is None:
            return
        left = int(producer.flush(timeout))
        if left:
            # Undeliverable now: purge them, so that their reports count them dropped.
            log.warning("event log: %d event(s) not delivered to Kafka at shutdown", left)
            producer.purge()
            producer.flush(0)

    # -- delivery and errors (librdkafka calls these from poll/flush) ----------------------
    def _callback(self, event_type: str) -> Callable[[Any, Any], None]:
        cb = self._delivered.get(event_type)
        if cb is None:

            def cb(err: Any, _msg: Any, event_type: str = event_type) -> None:
                if err is None:
                    self._report.written(event_type)
                    self._recovered()
                else:
                    self._report.dropped(1)
                    self._failed(str(err.str() if hasattr(err, "str") else err))

            self._delivered[event_type] = cb
        return cb

    def _on_error(self, err: Any) -> None:
        self._failed(str(err.str() if hasattr(err, "str") else err))

    def _failed(self, why: str) -> None:
        with self._state_lock:
            first, self._failing = not self._failing, True
        if first:
            log.warning(
                "event log: cannot publish to Kafka topic %s: %s (events queue up to %d, "
                "then are dropped and counted in kproxy_events_dropped_total)",
                self.settings.topic,
                why,
                self._queue_size,
            )

    def _recovered(self) -> None:
        with self._state_lock:
            was, self._failing = self._failing, False
        if was:
            log.info("event log: publishing to Kafka topic %s again", self.settings.topic)

    def _create_topic(self, config: dict[str, Any]) -> None:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined, unused-ignore]

        s = self.settings
        admin_config = {
            k: v
            for k, v in config.items()
            if k not in ("enable.idempotence", "compression.type", "linger.ms")
            and not k.startswith(("queue.", "message."))
        }
        admin = AdminClient(admin_config)
        topic = NewTopic(s.topic, s.partitions, s.replication_factor)
        future = admin.create_topics([topic], request_timeout=_TOPIC_CREATE_SECONDS)[s.topic]
        try:
            future.result(timeout=_TOPIC_CREATE_SECONDS)
            log.info("event log: created topic %s (%d partitions)", s.topic, s.partitions)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if getattr(err, "code", lambda: None)() != KafkaError.TOPIC_ALREADY_EXISTS:
                log.warning("event log: cannot create topic %s: %s", s.topic, exc)
        except Exception as exc:  # a timeout: the cluster is not there yet
            log.warning("event log: cannot create topic %s: %s", s.topic, exc)


def format_bootstrap(servers: tuple[tuple[str, int], ...]) -> str:
    return ",".join(format_host_port(h, p) for h, p in servers)
