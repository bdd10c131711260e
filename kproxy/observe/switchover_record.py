"""How a cluster switchover is reported (`kproxy.runtime.switchover`): its metrics and
its `switchover` events, one per phase (fenced, then completed; or refused), then one
per client and data API resumed on the target (`kproxy.observe.resumption`)."""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING, Any

from kproxy.observe.events import EVENT_FIELDS, SWITCHOVER
from kproxy.observe.resumption import Resumption
from kproxy.protocol.apis import api_name
from kproxy.runtime.observer import ProxyObserver

if TYPE_CHECKING:
    from kproxy.observe.events import EventLog
    from kproxy.observe.metrics import KproxyMetrics
    from kproxy.observe.worker_claims import WorkerClaims
    from kproxy.protocol.walker import LeaderObservation
    from kproxy.session.state import SessionState


class SwitchoverRecord(ProxyObserver):
    """The switchover hooks of `kproxy.observe.observability.Observability`."""

    metrics: KproxyMetrics
    events: EventLog | None
    claims: WorkerClaims | None
    own_client_id: str | None
    resumption: Resumption

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
        if phase == "fenced":
            self.resumption.fenced(trigger, source, target)
        elif phase == "refused":
            metrics.switchovers.labels(trigger, facts["reason"]).inc()
        elif phase == "completed":
            self.resumption.lift()
            metrics.switchovers.labels(trigger, "completed").inc()
            metrics.switchover_fence.set(facts["fence_seconds"])
            metrics.switchover_connections.labels("drained").inc(facts["drained"])
            metrics.switchover_connections.labels("cut").inc(facts["cut"])
            metrics.switchover_unanswered.inc(facts["unanswered"])
            transactions = metrics.switchover_transactions
            transactions.labels("aborted").inc(facts["transactions_aborted"])
            transactions.labels("not_aborted").inc(facts["transactions_not_aborted"])
            fields.update(
                fence_ms=round(facts["fence_seconds"] * 1000, 3),
                ms=round(facts["seconds"] * 1000, 3),
                drained=facts["drained"],
                cut=facts["cut"],
                unanswered=facts["unanswered"],
                transactions_aborted=facts["transactions_aborted"],
                transactions_not_aborted=facts["transactions_not_aborted"],
            )
        if self.events is not None:
            self.events.emit(SWITCHOVER, fields)

    def switchover_held(self) -> None:
        self.metrics.switchover_connections.labels("held").inc()

    def resumption_watch(self, session: SessionState) -> Container[str] | None:
        return self.resumption.watch(self.clients_awaiting_success(), session)

    def resumed(
        self, api_key: int, client_id: str | None, observations: list[LeaderObservation]
    ) -> None:
        """A walked data response: a client's first success on the target, perhaps."""
        resumption = self.resumption
        if resumption.lifted is None or (client_id is not None and client_id == self.own_client_id):
            return  # no switchover watched; or kproxy's own events producer, not a client
        client = client_id or ""
        seconds = resumption.observe(api_key, client, observations)
        if seconds is None:
            return
        api = api_name(api_key)
        claims = self.claims
        if claims is not None and not claims.first(
            f"resumed {client} {api}", resumption.sequence, 0
        ):
            return  # another worker served this client first (runtime.workers)
        self.metrics.switchover_resume.labels(api).observe(seconds)
        if self.events is not None:
            fields: dict[str, Any] = dict.fromkeys(EVENT_FIELDS[SWITCHOVER])
            fields.update(
                phase="resumed",
                trigger=resumption.trigger,
                from_cluster=resumption.source,
                to_cluster=resumption.target,
                client_id=client_id,
                api=api,
                ms=round(seconds * 1000, 3),
            )
            self.events.emit(SWITCHOVER, fields)
