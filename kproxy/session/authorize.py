"""A request checked against the listener's authorization rules by what it names
(sans-IO): passed as it came, answered by kproxy, or split.

A broker with ACLs answers entity by entity, and kproxy answers the same way:

* a request whose API a rule refuses whole, or whose group or transactional id (a
  field of the request itself) is refused, is answered by kproxy with that
  authorization error on every element (`kproxy.protocol.refusal`);
* a request naming only refused entities is answered by kproxy, each with its own
  error (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED...);
* a request naming allowed and refused entities in a top-level array (the topics of a
  Produce or a Fetch, the groups of a DescribeGroups) goes on without the refused
  elements, and their errors are appended to its response's (`edit_response`), as a
  broker appends those of the entities its ACLs refuse;
* an element that names allowed and refused entities below it (a Groups element of
  OffsetFetch v8+ with a refused topic) cannot be split by element: the whole request
  is answered by kproxy, and the step says so (`unsplittable`).

Topics named by id (KIP-516: Fetch v13+, Produce v13, ShareFetch) are resolved
through the topic ids kproxy has seen in Metadata responses (`TopicNames`); an id it
has not seen names no topic the rules allow. Metadata for all topics, ListGroups and
ListTransactions answers leave out what the caller may not describe, as a broker's do.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, Final, NamedTuple

from kproxy.protocol.apis import PRODUCE, api_name, is_flexible
from kproxy.protocol.entities import GROUP, TOPIC, TRANSACTIONAL_ID
from kproxy.protocol.errors import ApiDenied, MalformedMessage, ProtocolError
from kproxy.protocol.generated.entities import ENTITY_FIELDS
from kproxy.protocol.generated.layouts import LAYOUTS
from kproxy.protocol.headers import RequestHeader
from kproxy.protocol.layout_codec import Layout, LayoutReader, LayoutWriter, Value, layout_for
from kproxy.protocol.refusal import (
    CLUSTER_AUTHORIZATION_FAILED,
    GROUP_AUTHORIZATION_FAILED,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    refusal_response,
)
from kproxy.protocol.requests import produce_acks
from kproxy.session.audit import ELEMENT_LIMIT, READ_LIMIT
from kproxy.session.authorization import Scope
from kproxy.session.response_edit import (
    DESCRIBE_TOPIC_PARTITIONS,
    LIST_GROUPS,
    LIST_TRANSACTIONS,
    METADATA,
    ResponseEdit,
    TopicNames,
)

_KINDS: Final = {"topicName": TOPIC, "groupId": GROUP, "transactionalId": TRANSACTIONAL_ID}
_CODES: Final = {
    TOPIC: TOPIC_AUTHORIZATION_FAILED,
    GROUP: GROUP_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID: TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}
_ZERO_UUID: Final = bytes(16)
FIND_COORDINATOR: Final = 10
# DescribeConfigs, AlterConfigs, IncrementalAlterConfigs: their resources are topics
# (ConfigResource.Type 2) or groups (32) by type, unannotated; brokers and the rest are
# the cluster's, left to `apis` rules.
_CONFIG_APIS: Final = frozenset((32, 33, 44))
_CONFIG_KINDS: Final = {2: TOPIC, 32: GROUP}
_COORDINATOR_KINDS: Final = {0: GROUP, 1: TRANSACTIONAL_ID}
# What an element names: allowed, refused, or both below it.
_ALLOWED, _REFUSED, _MIXED = 1, 2, 3


class Verdict(NamedTuple):
    """What becomes of a request: `answer` (kproxy answers: the whole response
    frame), else `request` (a new frame to forward instead, None: as it came) and
    `edit` (what its response needs, None: nothing). `refused`: the entities refused,
    as "kind:name"; `unsplittable`: answered whole for want of a split."""

    answer: bytes | None
    request: bytes | None
    edit: ResponseEdit | None
    refused: list[str]
    unsplittable: bool = False


PASS: Final = Verdict(None, None, None, [])


def authorize(
    scope: Scope,
    names: TopicNames,
    hdr: RequestHeader,
    frame: memoryview,
    listener: str,
) -> Verdict:
    """Check one whole request. Raises MalformedMessage or ProtocolError
    `authorization_too_large` (a request kproxy cannot read is never forwarded
    half-checked), and ApiDenied for a Produce with acks=0 of which anything is refused:
    no response can say so, and a broker closes the connection then too."""
    verdict = _verdict(scope, names, hdr, frame, listener)
    if (
        verdict.refused
        and hdr.api_key == PRODUCE
        and produce_acks(frame, hdr.body_offset, len(frame), hdr.api_version) == 0
    ):
        raise ApiDenied(
            f"Produce with acks=0 naming {', '.join(verdict.refused)}, refused by the rules "
            f"of kproxy listener {listener!r}: no response to carry the errors"
        )
    return verdict


def _verdict(
    scope: Scope, names: TopicNames, hdr: RequestHeader, frame: memoryview, listener: str
) -> Verdict:
    key, version = hdr.api_key, hdr.api_version
    message = f"not authorized by the rules of kproxy listener {listener!r}"
    if not scope.api_allowed(key):
        return _answered(hdr, frame, message, None, [f"api:{api_name(key)}"], whole_api=True)
    layout = layout_for(key, True, version)
    if layout is None:
        raise MalformedMessage(f"{api_name(key)} v{version}: no layout to read it by")
    if len(frame) > READ_LIMIT:
        raise ProtocolError(
            f"{api_name(key)} request of {len(frame)} bytes: more than the {READ_LIMIT} bytes "
            "kproxy reads to authorize",
            reason="authorization_too_large",
        )
    reader = LayoutReader(frame, hdr.body_offset, is_flexible(key, version), ELEMENT_LIMIT, True)
    try:
        value = reader.read(layout)
    except ProtocolError as exc:
        if exc.reason != "too_large":
            raise
        raise ProtocolError(
            f"{api_name(key)} request of more than {ELEMENT_LIMIT} array elements: more "
            "than kproxy reads to authorize",
            reason="authorization_too_large",
        ) from exc
    check = _Check(scope, names, key)
    kept: Value = dict(value)
    refused_part: Value = {}
    split = False
    forced: int | None = None
    for name, typ, _nullable, _default, entity, _key, sub in layout[0]:
        item = value.get(name)
        if item is None:
            continue
        kind = _KINDS.get(entity)
        if kind is None and (kind := _coordinator_kind(key, name, value)) is not None:
            forced = _CODES[kind]  # the schema annotates no entity to take it from
        if typ == "string" and kind is not None:
            if item and not scope.allows(key, kind, item):
                # The request's own group or transactional id: all of it is refused.
                return _answered(hdr, frame, message, _CODES[kind], [f"{kind}:{item}"])
        elif typ.startswith("[]") and (kind is not None or sub is not None):
            verdicts = [check.element(typ, kind, sub, element) for element in item]
            if _MIXED in verdicts:
                return _answered(hdr, frame, message, None, check.refused, unsplittable=True)
            if _REFUSED in verdicts:
                split = True
                kept[name] = [e for e, v in zip(item, verdicts, strict=True) if v != _REFUSED]
                refused_part[name] = [
                    e for e, v in zip(item, verdicts, strict=True) if v == _REFUSED
                ]
        elif sub is not None and check.names_in(sub, item) & _REFUSED:
            # A struct of the request's own (a Streams topology): refused with it.
            return _answered(hdr, frame, message, None, check.refused)
    refused = check.refused
    edit = ResponseEdit(scope, names) if key in _FILTERED or key == METADATA else None
    if not split:
        if refused:
            return _answered(hdr, frame, message, forced, refused)
        if edit is not None:
            edit.all_topics = key == METADATA and not value.get("Topics")
        return Verdict(None, None, edit, [])
    # Metadata goes on with no topic (v1+): its answer still lists the brokers.
    if (key != METADATA or version == 0) and not any(kept[name] for name in refused_part):
        return _answered(hdr, frame, message, forced, refused)
    edit = edit or ResponseEdit(scope, names)
    # The refused elements alone, in a request of their own: what its refusal answers.
    edit.refused_part = {
        **{k: [] if isinstance(v, list) else v for k, v in value.items()},
        **refused_part,
    }
    edit.message = message
    edit.code = forced
    body = LayoutWriter(is_flexible(key, version), READ_LIMIT).write(layout, kept)
    return Verdict(None, bytes(frame[: hdr.body_offset]) + body, edit, refused)


_FILTERED: Final = frozenset((LIST_GROUPS, LIST_TRANSACTIONS))


def _coordinator_kind(key: int, name: str, value: Value) -> str | None:
    """What FindCoordinator's keys name: its schema leaves them unannotated, their
    kind being in KeyType (0: a group, 1: a transactional id; KIP-98, KIP-699)."""
    if key != FIND_COORDINATOR or name not in ("Key", "CoordinatorKeys"):
        return None
    return _COORDINATOR_KINDS.get(value.get("KeyType", 0))


def _answered(
    hdr: RequestHeader,
    frame: memoryview,
    message: str,
    code: int | None,
    refused: list[str],
    unsplittable: bool = False,
    whole_api: bool = False,
) -> Verdict:
    budget = max(1 << 20, 4 * len(frame))  # an answer echoes the request: bounded
    answer = refusal_response(
        hdr.api_key,
        hdr.api_version,
        hdr.correlation_id,
        frame,
        hdr.body_offset,
        message,
        budget,
        code,
        # Refused entities leave the request as a whole unrefused, as with a broker's
        # ACLs; a refused API or group refuses it all.
        CLUSTER_AUTHORIZATION_FAILED if whole_api else 0 if code is None else code,
    )
    if answer is None:
        raise ProtocolError(
            f"{api_name(hdr.api_key)} {message}, and its response cannot say so",
            reason="api_denied",
        )
    return Verdict(answer, None, None, refused, unsplittable)


class _Check:
    """Decides elements, remembering the entities refused."""

    __slots__ = ("key", "names", "refused", "scope")

    def __init__(self, scope: Scope, names: TopicNames, key: int) -> None:
        self.scope = scope
        self.names = names
        self.key = key
        self.refused: list[str] = []

    def element(self, typ: str, kind: str | None, sub: Layout | None, element: Any) -> int:
        if sub is None:  # an array of names (DescribeGroups' Groups)
            if kind is None or not isinstance(element, str):
                return _ALLOWED
            return self._one(kind, element)
        return self.names_in(sub, element) or _ALLOWED

    def names_in(self, layout: Layout, value: Value) -> int:
        """_ALLOWED, _REFUSED or both (_MIXED) for what a struct names; 0: nothing."""
        seen = 0
        if self.key in _CONFIG_APIS:  # a ConfigResource: its type says what it names
            kind = _CONFIG_KINDS.get(value.get("ResourceType", -1))
            name = value.get("ResourceName")
            return 0 if kind is None or not isinstance(name, str) else self._one(kind, name)
        for kind, name in _named(layout, value, self.names):
            seen |= self._one(kind, name)
        return seen

    def _one(self, kind: str, name: str | None) -> int:
        if name is not None and self.scope.allows(self.key, kind, name):
            return _ALLOWED
        self.refused.append(f"{kind}:{name if name is not None else '(unknown topic id)'}")
        return _REFUSED


def _named(layout: Layout, value: Value, names: TopicNames) -> Iterator[tuple[str, str | None]]:
    """Every entity a struct names, below it too; a topic id kproxy has not seen names
    None."""
    for name, typ, _nullable, _default, entity, _key, sub in layout[0]:
        item = value.get(name)
        if item is None:
            continue
        kind = _KINDS.get(entity)
        if kind is not None:
            for one in item if isinstance(item, list) else (item,):
                if one:
                    yield kind, one
        elif name == "TopicId" and typ == "uuid" and item != _ZERO_UUID:
            yield TOPIC, names.name_of(item)
        elif sub is not None:
            for element in item if isinstance(item, list) else (item,):
                yield from _named(sub, element, names)


def checked(key: int, version: int, api_rules: frozenset[int]) -> bool:
    """Whether a request of this API and version is checked by a listener's rules:
    it names entities (by name or topic id), its answer lists what the caller may
    describe, or a rule names its API."""
    return (
        key in api_rules
        or key in _FILTERED
        or key == FIND_COORDINATOR
        or key in _CONFIG_APIS
        or key in (METADATA, DESCRIBE_TOPIC_PARTITIONS)
        or (key, True, version) in ENTITY_FIELDS
        or (key, version) in _topic_id_requests()
    )


@functools.cache
def _topic_id_requests() -> frozenset[tuple[int, int]]:
    """The requests that may name a topic by id (KIP-516), from the layouts."""

    def has_topic_id(layout: Layout) -> bool:
        return any(
            (f[0] == "TopicId" and f[1] == "uuid") or (f[6] is not None and has_topic_id(f[6]))
            for f in layout[0]
        )

    return frozenset(
        (key, version)
        for (key, is_request, version), layout in LAYOUTS.items()
        if is_request and has_topic_id(layout)
    )
