"""A request checked against the listener's authorization rules by what it names
(sans-IO): passed as it came, answered by kproxy, or split.

A broker with ACLs answers entity by entity, and kproxy answers the same way:

* a request whose API a rule refuses whole, or whose own group, transactional id or
  coordinator key is refused, is answered by kproxy with that authorization error on
  every element (`kproxy.protocol.refusal`);
* a request naming only refused entities is answered by kproxy, each with its own
  error (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED...);
* a request naming allowed and refused entities goes on without the refused elements,
  at any depth (`kproxy.session.split`), and their errors are added to its response
  (`kproxy.session.response_edit`), as a broker adds those its ACLs refuse; where no
  answer could carry a refused element's error, the whole request is answered by
  kproxy.

Topics named by id (KIP-516: Fetch v13+, Produce v13, ShareFetch) are resolved
through the topic ids kproxy has seen in Metadata responses (`TopicNames`); an id it
has not seen names no topic the rules allow. Metadata for all topics, ListGroups and
ListTransactions answers leave out what the caller may not describe, as a broker's do.
"""

from __future__ import annotations

import functools
from typing import Final, NamedTuple

from kproxy.protocol.apis import FIND_COORDINATOR, METADATA, PRODUCE, api_name, is_flexible
from kproxy.protocol.entities import GROUP, KINDS, TOPIC, TRANSACTIONAL_ID
from kproxy.protocol.errors import ApiDenied, ProtocolError
from kproxy.protocol.generated.entities import ENTITY_FIELDS
from kproxy.protocol.generated.layouts import LAYOUTS
from kproxy.protocol.headers import RequestHeader
from kproxy.protocol.layout_codec import Layout, LayoutWriter, Value, layout_for
from kproxy.protocol.refusal import (
    CLUSTER_AUTHORIZATION_FAILED,
    CONFIG_RESOURCE_APIS,
    GROUP_AUTHORIZATION_FAILED,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    refusal_response,
)
from kproxy.protocol.requests import produce_acks
from kproxy.session.audit import READ_LIMIT, read_request
from kproxy.session.authorization import Permissions
from kproxy.session.response_edit import (
    DESCRIBE_TOPIC_PARTITIONS,
    LIST_GROUPS,
    LIST_TRANSACTIONS,
    ResponseEdit,
    TopicNames,
)
from kproxy.session.split import ALLOWED, REFUSED, Split

_CODES: Final = {
    TOPIC: TOPIC_AUTHORIZATION_FAILED,
    GROUP: GROUP_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID: TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}


class Verdict(NamedTuple):
    """What becomes of a request: `answer` (kproxy answers: the whole response
    frame), else `request` (a new frame to forward instead, None: as it came, or as
    `pieces` of `size` bytes when given) and `edit` (what its response needs, None:
    nothing). `refused`: the entities refused, as "kind:name"."""

    answer: bytes | None
    request: bytes | None
    edit: ResponseEdit | None
    refused: list[str]
    pieces: list[bytes | memoryview] | None = None
    size: int = 0


def authorize(
    scope: Permissions,
    names: TopicNames,
    hdr: RequestHeader,
    frame: memoryview,
    listener: str,
    read: tuple[Layout, Value] | None = None,
) -> Verdict:
    """Check one whole request, `frame`, or as `read` says when given (a tenant's
    request renamed; kproxy's answers then echo `frame`, the request as the tenant sent
    it). Raises
    MalformedMessage or ProtocolError `authorization_too_large` (a request kproxy cannot
    read is never forwarded half-checked), and ApiDenied for a Produce with acks=0 of
    which anything is refused: no response can say so, and a broker closes the
    connection then too."""
    verdict = _verdict(scope, names, hdr, frame, listener, read)
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
    scope: Permissions,
    names: TopicNames,
    hdr: RequestHeader,
    frame: memoryview,
    listener: str,
    read: tuple[Layout, Value] | None,
) -> Verdict:
    key, version = hdr.api_key, hdr.api_version
    message = f"not authorized by the rules of kproxy listener {listener!r}"
    if not scope.api_allowed(key):
        return answered(hdr, frame, message, None, [f"api:{api_name(key)}"], whole_api=True)
    # Its tagged fields kept: a split request is written back with them. Records as
    # views of an immutable frame: a split request's refused part may hold them until
    # its answer comes (a reader's buffer is not to be pinned).
    layout, value = read or read_request(
        hdr,
        frame,
        "to authorize",
        "authorization_too_large",
        keep_tagged=True,
        views=type(frame.obj) is bytes,
    )
    split = Split(key, lambda kind, name: scope.allows(key, kind, name), names.name_of)
    forced: int | None = None
    # The request's own group, transactional id or coordinator key: all of it refused.
    for name, typ, _nullable, _default, entity, _key, _sub in layout[0]:
        item = value.get(name)
        kind = KINDS.get(entity) or (split.coordinator_kind(value) if name == "Key" else None)
        if typ == "string" and kind is not None and item and not scope.allows(key, kind, item):
            return answered(hdr, frame, message, _CODES[kind], [f"{kind}:{item}"])
    coordinator = split.coordinator_kind(value)
    if coordinator is not None:
        forced = _CODES[coordinator]  # no entity annotation to take it from
    seen, kept, refused_part = split.struct(layout, value, layout_for(key, False, version), True)
    refused = split.refused
    edit = ResponseEdit(scope, names) if key in _FILTERED or key == METADATA else None
    if not seen & REFUSED:
        if edit is not None:
            edit.all_topics = key == METADATA and not value.get("Topics")
        return Verdict(None, None, edit, [])
    if split.unsplittable:
        return answered(hdr, frame, message, forced, refused)
    # Nothing left to ask: kproxy answers. Metadata goes on with no topic (v1+), as its
    # answer still lists the brokers.
    if (key != METADATA or version == 0) and not seen & ALLOWED:
        return answered(hdr, frame, message, forced, refused)
    edit = edit or ResponseEdit(scope, names)
    edit.refused_part = refused_part  # the refused elements, as a request of their own
    edit.message = message
    edit.code = forced
    body = LayoutWriter(is_flexible(key, version), READ_LIMIT).write(layout, kept)
    return Verdict(None, bytes(frame[: hdr.body_offset]) + body, edit, refused)


_FILTERED: Final = frozenset((LIST_GROUPS, LIST_TRANSACTIONS))


def answered(
    hdr: RequestHeader,
    frame: memoryview,
    message: str,
    code: int | None,
    refused: list[str],
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
    return Verdict(answer, None, None, refused)


def checked(key: int, version: int, api_rules: frozenset[int]) -> bool:
    """Whether a request of this API and version is checked by a listener's rules:
    it names entities (by name or topic id), its answer lists what the caller may
    describe, or a rule names its API."""
    return (
        key in api_rules
        or key in _FILTERED
        or key == FIND_COORDINATOR
        or key in CONFIG_RESOURCE_APIS
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
