"""Releasing a held response: the bytes the client gets, and the facts of what it was.

A whole response has its endpoints rewritten (or its address-bearing configuration
values redacted, or its ApiVersions clamped); a streamed one (`kproxy.session.streaming`)
has only its tail left to send. Both report the same `ResponseSeen`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Final

from kproxy.protocol.api_versions import clamp_api_versions
from kproxy.protocol.apis import API_VERSIONS, FETCH
from kproxy.protocol.config_addresses import names_an_address
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.primitives import INT32
from kproxy.protocol.rewriter import redact_configs, rewrite
from kproxy.protocol.throttle import with_throttle
from kproxy.protocol.walker import Endpoint, WalkResult
from kproxy.session.inflight import InFlight
from kproxy.session.mapping import AddressMapping, told_address
from kproxy.session.records import Held
from kproxy.session.steps import UpstreamStep
from kproxy.session.streaming import StreamedResponse

Advertised = Callable[[int], "tuple[int, int] | None"]
_pack_size: Final = INT32.pack


def release_whole(
    held: Held, mapping: AddressMapping, advertised: Advertised, step: UpstreamStep
) -> None:
    """Append a whole response, rewritten for the client, to `step`."""
    req, frame, walked, upstream_seconds, whole = held
    key = req.api_key
    if req.quota is not None:
        frame, whole = throttled(frame, req, upstream_seconds, step), None
    if walked is not None:
        step.facts()  # what the walk found is reported with the step's facts
    if walked is not None and walked.end < len(frame):
        # Bytes after the message belong to no field, so no rewrite reaches them: they
        # could carry an address past kproxy. The client gets the message alone.
        step.trimmed.append((key, len(frame) - walked.end))
        frame, whole = frame[: walked.end], None
    out = step.to_client
    size = len(frame)
    rewritten = removed = 0
    carried = False  # the response's endpoints reach the client (rewritten or as they were)
    if (
        walked is not None
        and walked.configs
        and (redaction := redact_configs(frame, walked.configs, names_an_address))
    ):
        chunks, size, count = redaction
        out.extend(chunks)
        step.redacted.append((key, count))
    elif walked is not None and walked.endpoints:
        rw = rewrite(frame, walked.endpoints, partial(told_address, mapping))
        out.extend(rw.chunks)
        size, rewritten, removed = rw.size, len(rw.rewritten), len(rw.removed)
        carried = True
        _count_unmapped(rw.removed, mapping, step)
    elif key == API_VERSIONS and (clamped := clamp_api_versions(frame, 4, req.version, advertised)):
        out.extend(clamped.chunks)
        step.clamped.append((len(clamped.dropped), len(clamped.lowered)))
    else:
        _append_as_read(out, frame, whole)
    step.responses.append(_seen(req, size, upstream_seconds, walked, carried, rewritten, removed))
    _answers_after(req, out)


def release_unwalked(
    req: InFlight,
    frame: memoryview,
    upstream_seconds: float,
    whole: bytes | None,
    step: UpstreamStep,
) -> None:
    """Append a response kproxy did not walk (nothing in it to rewrite) to `step`: the
    commonest response, released without being held first."""
    if req.quota is not None:
        frame, whole = throttled(frame, req, upstream_seconds, step), None
    _append_as_read(step.to_client, frame, whole)
    step.responses.append(req.answered(len(frame), upstream_seconds))
    _answers_after(req, step.to_client)


def throttled(
    frame: memoryview, req: InFlight, upstream_seconds: float, step: UpstreamStep
) -> memoryview:
    """The response with the throttle its client's quota gives it (KIP-219): its
    request's, or its own bytes' for a Fetch response; the step says how long to leave
    the client unread."""
    ms = throttle_for(req, 4 + len(frame), req.received + upstream_seconds, step)
    if not ms:
        return frame
    body = parse_response_header(frame, req.header_version)[1]
    return with_throttle(frame, body, req.api_key, req.version, ms)


def throttle_for(req: InFlight, size: int, now: float, step: UpstreamStep) -> int:
    """The throttle a response of `size` bytes to `req` carries (milliseconds)."""
    ms = req.throttle_ms
    quota = req.quota
    if req.api_key == FETCH and quota is not None:
        ms = max(ms, quota.fetched(size, now))
    step.throttle_ms = max(step.throttle_ms, ms)
    return ms


def _append_as_read(out: list[bytes | memoryview], frame: memoryview, whole: bytes | None) -> None:
    if whole is not None:
        out.append(whole)  # the chunk as read, when it was this response alone
    else:
        out.append(_pack_size(len(frame)))
        out.append(frame)


def release_tail(stream: StreamedResponse, mapping: AddressMapping, step: UpstreamStep) -> None:
    """Append the end of a streamed response, rewritten at its own length, to `step`."""
    sent = stream.tail(partial(told_address, mapping))
    step.to_client.extend(stream.held)  # the bytes that waited with the tail
    if sent.chunk:
        step.to_client.append(sent.chunk)
    _count_unmapped(sent.removed, mapping, step)
    req = stream.request
    if sent.blanked:
        step.trimmed.append((req.api_key, sent.blanked))
    step.streamed.append((req.api_key, sent.outcome))
    step.responses.append(
        _seen(
            req,
            stream.size,
            stream.upstream_seconds,
            stream.walked,
            sent.outcome != "dropped",
            sent.rewritten,
            len(sent.removed),
        )
    )
    _answers_after(req, step.to_client)


def _answers_after(req: InFlight, out: list[bytes | memoryview]) -> None:
    """What kproxy answered itself to the requests that followed `req`, right after its
    response (`InFlight.then`)."""
    then = req.then
    if then is not None:
        out.extend(then)


def _count_unmapped(removed: list[Endpoint], mapping: AddressMapping, step: UpstreamStep) -> None:
    for ep in removed:
        node_id = ep.node_id
        if node_id is not None and node_id >= 0 and not mapping.is_mappable(node_id):
            step.unmapped.append(node_id)


def _seen(
    req: InFlight,
    size: int,
    upstream_seconds: float,
    walked: WalkResult | None,
    carried: bool,
    rewritten: int,
    removed: int,
) -> InFlight:
    leaders = None if walked is None else walked.leaders
    if leaders and walked is not None and walked.endpoints and carried:
        # The nodes whose endpoints came with the leadership (KIP-951): a client told of
        # a new leader together with its address needs no metadata refresh.
        req.endpoint_nodes = frozenset(e.node_id for e in walked.endpoints if e.node_id is not None)
    req.leaders = leaders
    req.rewritten = rewritten
    req.removed = removed
    return req.answered(size, upstream_seconds)
