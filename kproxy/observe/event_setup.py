"""The event log a configuration asks for: its sinks (files, a Kafka topic, or both),
and its counts wired to the metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kproxy.config.events import PROXY_BOOTSTRAP
from kproxy.observe.event_sink import EventSink
from kproxy.observe.events import EventLog
from kproxy.observe.metrics import KproxyMetrics

if TYPE_CHECKING:
    from kproxy.config.settings import Settings


def open_event_log(
    settings: Settings,
    instance: str,
    metrics: KproxyMetrics,
    proxy_bootstrap: Callable[[], str | None],
) -> tuple[EventLog, str | None]:
    """The event log, and the Kafka sink's client id when it publishes through this
    kproxy (`proxy_bootstrap` then says where, once the listener is bound; the log is
    started by `Observability.start_events`)."""
    ev = settings.events
    sinks: list[EventSink] = []
    autostart = True
    own_client_id = None
    if "kafka" in ev.sink:
        from kproxy.observe.event_kafka import KafkaSink, format_bootstrap, sink_client_id

        kafka = ev.kafka
        client_id = sink_client_id(instance)
        if kafka.bootstrap_servers == PROXY_BOOTSTRAP:
            own_client_id = client_id
            autostart = False

            def bootstrap() -> str:
                servers = proxy_bootstrap()
                if servers is None:
                    raise RuntimeError("kproxy's own bootstrap listener never started")
                return servers
        else:
            servers = format_bootstrap(kafka.bootstrap_servers)

            def bootstrap() -> str:
                return servers

        sinks.append(KafkaSink(kafka, client_id, bootstrap, queue_size=ev.queue_size))
    event_log = EventLog(
        ev.dir if "file" in ev.sink else None,
        sinks=sinks,
        instance=instance,
        max_file_bytes=ev.max_file_bytes,
        rotate_seconds=ev.rotate_seconds,
        queue_size=ev.queue_size,
        on_written=metrics.event_written,
        on_dropped=metrics.event_dropped,
        autostart=autostart,
    )
    for report in event_log.reports:  # each sink's series exists from the start, at 0
        metrics.events_dropped.labels(report.name)
    # Read at scrape time: the event loop's emit stays a deque append.
    metrics.events_pending.set_function(lambda: event_log.pending)
    return event_log, own_client_id
