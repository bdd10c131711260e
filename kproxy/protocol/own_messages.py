"""Requests kproxy makes itself, at any version, and their responses, by the generated
layouts (`kproxy.protocol.layout_codec`): for the few exchanges beyond discovery's
hand-written ones (a switchover's transaction aborts, `kproxy.runtime.transaction_abort`)."""

from __future__ import annotations

from kproxy.protocol.apis import APIS, is_flexible
from kproxy.protocol.entities import read_message
from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.layout_codec import LayoutWriter, Value, layout_for
from kproxy.protocol.requests import request_frame

_BUDGET = 1 << 20  # kproxy's own requests are small
_MAX_ELEMENTS = 10_000  # array elements read from an answer, at most


def own_request(
    api_key: int, version: int, correlation_id: int, value: Value, client_id: bytes = b"kproxy"
) -> bytes:
    """A whole request frame: size, request header (v1, or v2 with its empty tag buffer
    for a flexible version), then `value` written by the version's layout."""
    layout = layout_for(api_key, True, version)
    if layout is None:
        raise ValueError(f"no layout for request {api_key} v{version}")
    flexible = is_flexible(api_key, version)
    body = LayoutWriter(flexible, _BUDGET).write(layout, value)
    return request_frame(
        api_key, version, correlation_id, client_id, b"\x00" + body if flexible else body
    )


def own_response(frame: memoryview, api_key: int, version: int) -> Value:
    """The response to `own_request(api_key, version, ...)`, read by its layout."""
    _, body = parse_response_header(frame, APIS[api_key].headers[version][1])
    read = read_message(api_key, False, version, frame, body, _MAX_ELEMENTS)
    if read is None:
        raise MalformedMessage(f"no layout for response {api_key} v{version}")
    return read[1]
