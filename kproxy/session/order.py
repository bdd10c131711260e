"""A connection's responses keep the order of its requests (Kafka answers each
connection's requests in order): which request a response answers, and where kproxy's
own answers (a refusal, KIP-511's ApiVersions answer) go among the broker's."""

from __future__ import annotations

from typing import Final

from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.primitives import INT32
from kproxy.session.inflight import InFlight
from kproxy.session.records import Held
from kproxy.session.streaming import StreamedResponse

_corr_id: Final = INT32.unpack_from


def request_for(inflight: CorrelationTable, frame: memoryview) -> InFlight:
    """The request a response answers, out of the table; MalformedMessage when no
    request waits for it."""
    if len(frame) < 4:
        raise MalformedMessage("response shorter than a correlation id")
    corr = _corr_id(frame, 0)[0]
    req: InFlight | None = inflight.pop(corr)
    if req is None:
        raise MalformedMessage(
            f"response with correlation id {corr} that no request is waiting for",
            reason="unexpected_correlation_id",
        )
    return req


def answer_in_order(
    answer: bytes,
    inflight: CorrelationTable,
    held: list[Held | StreamedResponse] | None,
    stream: StreamedResponse | None,
    to_client: list[bytes | memoryview],
) -> None:
    """kproxy's own answer to a request: to the client now (`to_client`) when no
    response to an earlier request is still to come, else right after the last of those
    (`InFlight.then`, sent as that response is released)."""
    before = _answered_last(inflight, held, stream)
    if before is None:
        to_client.append(answer)
    elif before.then is None:
        before.then = [answer]
    else:
        before.then.append(answer)


def _answered_last(
    inflight: CorrelationTable,
    held: list[Held | StreamedResponse] | None,
    stream: StreamedResponse | None,
) -> InFlight | None:
    """The request whose response is the last still to reach the client, or None:
    awaited from the broker, held for a listener, or being streamed."""
    if inflight:  # responses come in order: the request added last is answered last
        req: InFlight | None = inflight.peek(inflight.latest_id)
        if req is not None:
            return req
    if held:
        return held[-1].request
    return None if stream is None else stream.request
