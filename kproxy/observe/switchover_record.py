"""How a cluster switchover is reported (`kproxy.runtime.switchover`): its metrics and
its `switchover` events, one per phase (fenced, then completed; or refused)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kproxy.observe.events import EVENT_FIELDS, SWITCHOVER
from kproxy.runtime.observer import ProxyObserver

if TYPE_CHECKING:
    from kproxy.observe.events import EventLog
    from kproxy.observe.metrics import KproxyMetrics


class SwitchoverRecord(ProxyObserver):
    """The switchover hooks of `kproxy.observe.observability.Observability`."""

    metrics: KproxyMetrics
    events: EventLog | None

    def active_cluster(self, name: str, names: list[str]) -> None:
        gauge = self.metrics.active_cluster
        for each in names:
            gauge.labels(each).set(1 if each == name else 0)

    def switchover(
        self, phase: str, trigger: str, source: str, target: str, facts: dict[str, Any]
    ) -> None:
        metrics = self.metrics
        fields: dict[str, Any] = dict.fromkeys(EVENT_FIELDS[SWITCHOVER])
        fields.update(
            phase=phase,
            trigger=trigger,
            from_cluster=source,
            to_cluster=target,
            connections=facts.get("connections"),
            reason=facts.get("reason"),
            detail=facts.get("why"),
        )
        if phase == "refused":
            metrics.switchovers.labels(trigger, facts["reason"]).inc()
        elif phase == "completed":
            metrics.switchovers.labels(trigger, "completed").inc()
            metrics.switchover_fence.set(facts["fence_seconds"])
            metrics.switchover_connections.labels("drained").inc(facts["drained"])
            metrics.switchover_connections.labels("cut").inc(facts["cut"])
            fields.update(
                fence_ms=round(facts["fence_seconds"] * 1000, 3),
                ms=round(facts["seconds"] * 1000, 3),
                drained=facts["drained"],
                cut=facts["cut"],
            )
        if self.events is not None:
            self.events.emit(SWITCHOVER, fields)

    def switchover_held(self) -> None:
        self.metrics.switchover_connections.labels("held").inc()
