"""Requests kproxy makes itself, at any version, and their responses, by the generated
layouts (`kproxy.protocol.layout_codec`): for the few exchanges beyond discovery's
hand-written ones (a switchover's transaction aborts, `kproxy.runtime.transaction_abort`)."""

from __future__ import annotations

import struct

from kproxy.protocol.apis import APIS
from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.layout_codec import LayoutReader, LayoutWriter, Value, layout_for

_HEADER = struct.Struct(">hhih")  # api key, version, correlation id, client id's length
_SIZE = struct.Struct(">i")
_BUDGET = 1 << 20  # kproxy's own requests are small


def _flexible(api_key: int, version: int) -> bool:
    return 0 <= APIS[api_key].first_flexible <= version


def own_request(
    api_key: int, version: int, correlation_id: int, value: Value, client_id: bytes = b"kproxy"
) -> bytes:
    """A whole request frame: size, request header (v1, or v2 with its empty tag buffer
    for a flexible version), then `value` written by the version's layout."""
    layout = layout_for(api_key, True, version)
    if layout is None:
        raise ValueError(f"no layout for request {api_key} v{version}")
    flexible = _flexible(api_key, version)
    head = _HEADER.pack(api_key, version, correlation_id, len(client_id)) + client_id
    if flexible:
        head += b"\x00"
    payload = LayoutWriter(flexible, _BUDGET).write(layout, value, head)
    return _SIZE.pack(len(payload)) + payload


def own_response(frame: memoryview, api_key: int, version: int) -> Value:
    """The response to `own_request(api_key, version, ...)`, read by its layout."""
    layout = layout_for(api_key, False, version)
    if layout is None:
        raise MalformedMessage(f"no layout for response {api_key} v{version}")
    _, body = parse_response_header(frame, APIS[api_key].headers[version][1])
    return LayoutReader(frame, body, _flexible(api_key, version), max_elements=10_000).read(layout)
