"""Responses the general path reads for what they say, and passes on unchanged (sans-IO):
a SASL exchange's (the principal it confirms, `kproxy.session.identity`), a change's
(its outcome, for the audit trail: `kproxy.session.audit`) and a transactional
producer's (whether its transactional id is its: `kproxy.session.transactions`)."""

from __future__ import annotations

from kproxy.session.admission import SASL_APIS
from kproxy.session.audit import audit_response
from kproxy.session.identity import sasl_response
from kproxy.session.inflight import InFlight
from kproxy.session.state import SessionState
from kproxy.session.steps import UpstreamStep
from kproxy.session.transactions import answered_without_error, note


def read_answer(
    session: SessionState, req: InFlight, frame: memoryview, step: UpstreamStep
) -> None:
    """What the response `frame` to `req` says, recorded in `session` or `step`."""
    if req.api_key in SASL_APIS and session.identity is not None:
        ended = sasl_response(session.identity, req, frame)
        if ended is not None:
            step.facts().authentications.append(ended)
    elif req.audit is not None:  # a change, recorded with the cluster's answer
        step.facts().audits.append(audit_response(req.audit, frame, req.header_version))
    elif req.transactional_id is not None and answered_without_error(frame, req.header_version):
        session.transactional_ids = note(session.transactional_ids, req.transactional_id)
