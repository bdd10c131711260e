"""The response a broker sends to a request it does not authorize, for any API.

A listener's API policy refuses some APIs (`kproxy.session.policy`). A broker answers an
unauthorized request with that API's own response, carrying an authorization error
where the entities of the request are echoed back, and clients surface it as an
authorization error rather than retrying or hanging. kproxy writes the same, from the
generated layouts of the request and the response (so every API and version is covered
the same way):

* the response's arrays whose elements carry an ErrorCode echo the request's array of
  the same name, or its only array at that level (CreateTopics' `Topics`,
  AlterConfigs' `Resources` -> `Responses`, DeleteTopics' `TopicNames` -> `Responses`),
  one element for each, with their key fields copied (`mapKey`, `entityType`, the
  partition and resource identifiers);
* every ErrorCode gets the authorization error of what its element names: a topic
  (`entityType: topicName`) TOPIC_AUTHORIZATION_FAILED (29), a group
  GROUP_AUTHORIZATION_FAILED (30), a transactional id TRANSACTIONAL_ID_AUTHORIZATION_FAILED
  (53), a configuration resource by its ResourceType, anything else
  CLUSTER_AUTHORIZATION_FAILED (31); every ErrorMessage says why;
* everything else takes its schema default.

A response with no ErrorCode at all in that version cannot say "refused": such a
request is not answered (`None`) and the connection is closed, as a broker closes a
connection that sends an API its listener does not serve.
"""

from __future__ import annotations

from typing import Any

from kproxy.protocol.apis import api_name, header_versions, is_flexible
from kproxy.protocol.layout_codec import (
    Layout,
    LayoutReader,
    LayoutWriter,
    TooLarge,
    Value,
    layout_for,
)
from kproxy.protocol.primitives import INT32

TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53

_BY_ENTITY = {
    "topicName": TOPIC_AUTHORIZATION_FAILED,
    "groupId": GROUP_AUTHORIZATION_FAILED,
    "transactionalId": TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}
# DescribeConfigs, AlterConfigs, IncrementalAlterConfigs name a ConfigResource.Type:
# TOPIC (2) and GROUP (32) have their own authorization errors; BROKER (4),
# BROKER_LOGGER (8) and CLIENT_METRICS (16) are the cluster's.
CONFIG_RESOURCE_APIS = frozenset((32, 33, 44))
_BY_CONFIG_RESOURCE = {2: TOPIC_AUTHORIZATION_FAILED, 32: GROUP_AUTHORIZATION_FAILED}
# Identifiers copied from a request element to the response element answering it, by
# name, besides the fields the schemas mark as map keys or entities; names in one group
# are the same identifier under the request's and the response's spelling.
_SAME_KEY = (
    frozenset(("PartitionIndex", "Partition", "Index")),
    frozenset(("Name", "Topic", "TopicName")),
    frozenset(("TopicId",)),
    frozenset(("ResourceType",)),
    frozenset(("ResourceName",)),
)
_ZERO_UUID = bytes(16)
# A node an error names: none (Kafka's Node.noNode(): id -1, port -1), never node 0.
_NO_NODE = frozenset(("NodeId", "Port", "LeaderId"))
_ALIASES = {name: group for group in _SAME_KEY for name in group}
_PARTITION = _SAME_KEY[0]
# The fields that identify what an element answers, by name.
IDENTIFIERS = frozenset(_ALIASES)


def _has_error_code(layout: Layout) -> bool:
    fields, _tagged = layout
    for name, typ, *_rest, sub in fields:
        if typ == "int16" and name.endswith("ErrorCode"):
            return True
        if sub is not None and _has_error_code(sub):
            return True
    return False


def can_refuse(api_key: int, version: int) -> bool:
    """Whether a refusal of this request can be said in its response."""
    response = layout_for(api_key, False, version)
    request = layout_for(api_key, True, version)
    return request is not None and response is not None and _has_error_code(response)


class Refusal:
    """Builds one refusal (sans-IO: bytes in, bytes out)."""

    def __init__(
        self,
        api_key: int,
        message: str,
        forced_code: int | None = None,
        top_code: int = CLUSTER_AUTHORIZATION_FAILED,
    ) -> None:
        self.api_key = api_key
        self.message = message
        # Every ErrorCode, whatever its element names: a request refused for its group
        # or transactional id refuses each of its partitions with that one error.
        self.forced_code = forced_code
        # The error of what names no entity: the cluster's for a refused API, none (0)
        # where only the entities a request names are refused.
        self.top_code = top_code

    def body(self, request: Value, req_layout: Layout, resp_layout: Layout) -> Value:
        return self._struct(resp_layout, req_layout, request, self.top_code)

    def _code(self, req_layout: Layout | None, request: Value, inherited: int) -> int:
        if self.forced_code is not None:
            return self.forced_code
        if req_layout is None:
            return inherited
        if self.api_key in CONFIG_RESOURCE_APIS and "ResourceType" in request:
            return _BY_CONFIG_RESOURCE.get(request["ResourceType"], CLUSTER_AUTHORIZATION_FAILED)
        for name, _typ, _nullable, _default, entity, _key, _sub in req_layout[0]:
            code = _BY_ENTITY.get(entity)
            if code is not None and request.get(name) is not None:
                return code
            if name == "TopicId" and request.get(name, _ZERO_UUID) != _ZERO_UUID:
                return TOPIC_AUTHORIZATION_FAILED  # a topic named by its id (KIP-516)
        return inherited

    def _struct(self, resp: Layout, req: Layout | None, request: Value, inherited: int) -> Value:
        code = self._code(req, request, inherited)
        req_fields = {} if req is None else {f[0]: f for f in req[0]}
        out: Value = {}
        for name, typ, nullable, _default, entity, key, sub in resp[0]:
            if typ == "int16" and name.endswith("ErrorCode"):  # PartitionErrorCode too
                out[name] = code
            elif name == "ErrorMessage" and typ == "string" and code:
                out[name] = self.message
            elif typ == "[]struct":
                assert sub is not None
                out[name] = self._array(name, sub, req_fields, request, code)
            elif typ != "struct" and not typ.startswith("[]"):
                source = _copied_from(name, typ, entity, key, req_fields)
                if source is not None and source in request:
                    value = request[source]
                    if value is not None or nullable:
                        out[name] = value
                elif name in _NO_NODE and typ == "int32":
                    out[name] = -1
        return out

    def _array(
        self,
        name: str,
        elem: Layout,
        req_fields: dict[str, tuple[Any, ...]],
        request: Value,
        code: int,
    ) -> list[Value]:
        if not _has_error_code(elem):
            return []
        source = source_array(name, elem, req_fields)
        if source is None:
            return []
        items = request.get(source[0]) or []
        if source[1] == "[]struct":
            return [self._struct(elem, source[6], item, code) for item in items]
        # An array of plain values (DeleteTopics v0-5 TopicNames): each is the key of
        # one answer, in the response's field of the same entity.
        scalar: Layout = (("", source[1][2:], False, None, source[4], True, None),), {}
        answers = [self._struct(elem, scalar, {"": item}, code) for item in items]
        if not source[4] and any(f[0] == "Key" for f in elem[0]):
            # FindCoordinator v4+: each CoordinatorKeys name is a Coordinators[].Key.
            for answer, item in zip(answers, items, strict=True):
                answer["Key"] = item
        return answers


def source_array(
    name: str, elem: Layout, req_fields: dict[str, tuple[Any, ...]]
) -> tuple[Any, ...] | None:
    """The request array a response array answers element by element: the one of the
    same name, the only one, or the first whose elements carry the identifiers the
    response's do (Fetch's `Topics` -> `Responses`, not `ForgottenTopicsData`)."""
    arrays = [f for f in req_fields.values() if f[1].startswith("[]")]
    source = req_fields.get(name)
    if source is not None and source[1].startswith("[]"):
        return source
    if len(arrays) == 1:
        return arrays[0]
    keys = {f[0] for f in elem[0] if f[0] in _ALIASES and f[0] not in _PARTITION}
    for array in arrays:
        sub = array[6]
        if sub is not None and any(_ALIASES[k] & {f[0] for f in sub[0]} for k in keys):
            return array
    return None


def _copied_from(
    name: str, typ: str, entity: str, key: bool, req_fields: dict[str, tuple[Any, ...]]
) -> str | None:
    """The request field a response field echoes, if it is an identifier."""
    group = _ALIASES.get(name, frozenset((name,)))
    for other in req_fields.values():
        other_name, other_typ, _n, _d, other_entity, other_key, _s = other
        if other_typ != typ:
            continue
        if other_name == "" and entity and other_entity == entity:
            return ""
        if other_name in group and (key or other_key or entity or other_entity or name in _ALIASES):
            return str(other_name)
    return None


def refusal_response(
    api_key: int,
    version: int,
    correlation_id: int,
    frame: memoryview,
    body_offset: int,
    message: str,
    budget: int,
    forced_code: int | None = None,
    top_code: int = CLUSTER_AUTHORIZATION_FAILED,
) -> bytes | None:
    """The whole response frame refusing this request, or None when its response cannot
    carry an error (the connection is closed instead) or would pass `budget` bytes.

    Raises MalformedMessage when the request body does not parse.
    """
    req_layout = layout_for(api_key, True, version)
    resp_layout = layout_for(api_key, False, version)
    headers = header_versions(api_key, version)
    if req_layout is None or resp_layout is None or headers is None:
        return None
    if not _has_error_code(resp_layout):
        return None
    flexible = is_flexible(api_key, version)
    request = LayoutReader(frame, body_offset, flexible).read(req_layout)
    refusal = Refusal(api_key, message, forced_code, top_code)
    body = refusal.body(request, req_layout, resp_layout)
    writer = LayoutWriter(flexible, budget)
    try:
        encoded = writer.write(resp_layout, body)
    except TooLarge:
        return None
    # Response header v1 (flexible APIs but ApiVersions) ends with an empty tag buffer.
    header = INT32.pack(correlation_id) + (b"\x00" if headers[1] >= 1 else b"")
    return INT32.pack(len(header) + len(encoded)) + header + encoded


def refusal_text(api_key: int, listener: str) -> str:
    return f"{api_name(api_key)} is not allowed on kproxy listener {listener!r}"
