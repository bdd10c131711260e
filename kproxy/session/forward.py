"""Requests from the client on their way to the broker: each admitted by its route
(`kproxy.session.admission`), forwarded as it came, rewritten, refused or answered by
kproxy, in order, until the in-flight limit is reached; and charged to the client's
quota (sans-IO)."""

from __future__ import annotations

from typing import Final

from kproxy.protocol.apis import FETCH, WALKED_REQUESTS
from kproxy.protocol.frames import FrameMore, FrameStart
from kproxy.protocol.headers import parse_request_header
from kproxy.protocol.primitives import INT32
from kproxy.protocol.rewriter import rewrite
from kproxy.protocol.throttle import CARRIERS
from kproxy.protocol.walker import MAX_REQUEST_ENDPOINTS, can_walk, walk
from kproxy.session.admission import (
    ANSWER,
    AUDIT,
    AUTHORIZE,
    CLOSE,
    DENY,
    FORWARD,
    IDENTIFY,
    TRANSACT,
    TRANSLATE,
    WALK,
    admit,
    api_versions_fallback,
    closing_error,
    refuse,
)
from kproxy.session.audit import REFUSE, audit_request, refusal_record
from kproxy.session.checks import check_request
from kproxy.session.identity import Identity, sasl_request
from kproxy.session.inflight import InFlight
from kproxy.session.order import answer_in_order
from kproxy.session.quota import QuotaBook
from kproxy.session.records import Frame
from kproxy.session.state import SessionState
from kproxy.session.steps import ClientStep, UpstreamStep
from kproxy.session.topic_ids import translate_produce, with_old_ids
from kproxy.session.transactions import transactional_id

_pack_size: Final = INT32.pack


def forward_requests(
    session: SessionState,
    frames: list[Frame],
    now: float,
    step: ClientStep | UpstreamStep,
    whole: bytes | None = None,
) -> list[Frame] | None:
    """Admit and forward `frames` into `step` in order; those from the first that finds
    the in-flight table full are returned, to wait (None: none waits). `whole`: the read
    itself, when it was these frames' one whole request."""
    limit = session.max_in_flight
    inflight = session.inflight
    out, admitted, answers = step.to_upstream, step.requests, step.to_client
    admission = session.admission
    for i, frame in enumerate(frames):
        if type(frame) is FrameMore:  # the rest of a request already on its way
            out.append(frame.data)
            continue
        if len(inflight) >= limit:
            return frames[i:]
        head = frame.head if type(frame) is FrameStart else frame
        assert type(head) is memoryview
        hdr = parse_request_header(head)
        route = admission.route(hdr.api_key, hdr.api_version)
        # An ApiVersions version kproxy does not know is answered only when nothing is
        # in flight: its answer would otherwise pass the responses before it.
        if route == CLOSE or (route == ANSWER and inflight):
            raise closing_error(hdr, admission.refused_apis)
        edit = None
        if route & AUTHORIZE and type(frame) is not FrameStart:
            route ^= AUTHORIZE
            verdict = check_request(session, hdr, head)
            if verdict is not None:
                if verdict.refused:
                    step.refused.append(refusal_record(hdr, verdict.refused))
                if verdict.answer is not None:
                    answer_in_order(verdict.answer, inflight, session.held, session.stream, answers)
                    continue
                edit = verdict.edit
                if verdict.pieces is not None:  # a tenant's, renamed
                    if route == FORWARD:
                        # In pieces, its records not copied (the header is as it came).
                        req = admit(hdr, head, verdict.size, now, admitted, inflight)
                        req.authz = edit
                        out.append(_pack_size(verdict.size))
                        out.extend(verdict.pieces)
                        continue
                    head, whole = memoryview(b"".join(verdict.pieces)), None
                elif verdict.request is not None:  # split: what goes on
                    head, whole = memoryview(verdict.request), None
        if route & TRANSLATE and type(frame) is not FrameStart:
            # A Produce naming the ids of the cluster a switchover left (topic_ids).
            route ^= TRANSLATE
            translated = translate_produce(hdr, head, session.policy.moved_topic_ids)
            if translated is not None:
                req = admit(hdr, head, translated.size, now, admitted, inflight)
                req.authz = with_old_ids(edit, translated.old_ids, session.policy.topic_names)
                out.append(_pack_size(translated.size))
                out.extend(translated.pieces)
                continue
        if type(frame) is FrameStart:
            # A large request on its way: unless kproxy must rewrite or refuse it, it is
            # passed on as it arrives, its header read from its first bytes.
            if route != FORWARD:
                session.client_reader.gather()
                continue
            admit(hdr, head, frame.size, now, admitted, inflight)
            out.append(_pack_size(frame.size))
            out.append(head)
            continue
        answer = None
        if route == DENY:
            # Answered by kproxy, after the responses to the requests before it; the
            # requests after it go on meanwhile (no slot taken, nothing waits).
            answer = refuse(head, hdr, session.policy.listener)
            refused = audit_request(hdr, head, REFUSE)
            assert refused is not None
            step.refused.append(refused)
        elif route == ANSWER:  # KIP-511: an ApiVersions kproxy cannot read
            answer = api_versions_fallback(hdr.correlation_id)
        if answer is not None:
            answer_in_order(answer, inflight, session.held, session.stream, answers)
            continue
        key, version = hdr.api_key, hdr.api_version
        walked = None
        if route == WALK or (
            route == AUDIT and key in WALKED_REQUESTS and can_walk(key, version, True)
        ):
            # Walked first: the walker's caps hold before an audited one is read whole.
            walked = walk(head, hdr.body_offset, key, version, True, MAX_REQUEST_ENDPOINTS)
        req = admit(hdr, head, len(head), now, admitted, inflight)
        req.authz = edit
        if route == AUDIT:
            # A body that does not parse closes the connection: never passed on unread.
            req.audit = audit_request(hdr, head)
        elif route == IDENTIFY:
            if session.identity is None:
                session.identity = Identity(session.oauthbearer_claim)
            sasl_request(session.identity, hdr, head)
        elif route == TRANSACT:
            req.transactional_id = transactional_id(hdr, head)
        if walked is not None and walked.endpoints:
            out.extend(rewrite(head, walked.endpoints, session.cluster_view).chunks)
            continue
        if whole is None:
            out.append(_pack_size(len(head)))
            out.append(head)
        else:
            out.append(whole)  # one buffer, as read
    return None


def charge(session: SessionState, quotas: QuotaBook, step: ClientStep, now: float) -> None:
    """Charge a read's requests to the client's quota (`kproxy.session.quota`): over
    it, the last that can carry a throttle carries it, and the step says so."""
    inflight = session.inflight
    req: InFlight | None = inflight.peek(inflight.latest_id)
    client_id = req.client_id if req is not None else session.quota_client_id
    quota = session.quota
    # Looked up again when the client id changes or a reload changed the entries
    # (a client no entry matched may be matched now).
    if client_id != session.quota_client_id or quotas.generation != session.quota_generation:
        quota = session.quota = quotas.bucket(client_id, session.client_host, now)
        session.quota_client_id = client_id
        session.quota_generation = quotas.generation
    if quota is None:
        return
    ms = quota.charge(step.requests, now)
    if ms:
        step.throttle_ms = ms
    if req is not None and req.api_key in CARRIERS and req.version >= 1:
        if ms:
            req.throttle_ms = max(req.throttle_ms, ms)
        # A Fetch response is charged, and may be throttled, as it passes.
        if ms or (req.api_key == FETCH and quota.limits_fetch):
            req.quota = quota
