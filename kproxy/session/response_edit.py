"""What the listener's authorization does to a response (sans-IO): the errors of the
refused part of a split request appended to the broker's answers, and the topics,
groups and transactional ids the caller may not describe left out of a Metadata for
all topics, a ListGroups or a ListTransactions answer, as a broker's authorizer
leaves them out; for a tenant's caller, names unprefixed and other tenants' left out.
Metadata answers also teach the listener's topic ids (`TopicNames`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from kproxy.protocol.apis import METADATA, is_flexible
from kproxy.protocol.entities import GROUP, TOPIC, TRANSACTIONAL_ID
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.layout_codec import LayoutReader, LayoutWriter, Value, layout_for
from kproxy.protocol.refusal import IDENTIFIERS, Refusal
from kproxy.protocol.renaming import rename
from kproxy.session.authorization import Permissions

if TYPE_CHECKING:
    from kproxy.session.tenancy import Tenant

LIST_GROUPS: Final = 16
LIST_TRANSACTIONS: Final = 66
DESCRIBE_TOPIC_PARTITIONS: Final = 75
_ZERO_UUID: Final = bytes(16)
# (array, name field, kind) of the answers that list what the caller may describe.
_LISTED: Final = {
    LIST_GROUPS: ("Groups", "GroupId", GROUP),
    LIST_TRANSACTIONS: ("TransactionStates", "TransactionalId", TRANSACTIONAL_ID),
}


class TopicNames:
    """Topic ids and their names, as Metadata answers said (KIP-516), shared by a
    listener's sessions: a consumer's Fetch names its topics by id on a connection
    other than the one its Metadata came on. Bounded: the oldest go first."""

    __slots__ = ("_names", "most")

    def __init__(self, most: int = 100_000) -> None:
        self._names: dict[bytes, str] = {}
        self.most = most

    def name_of(self, topic_id: bytes) -> str | None:
        return self._names.get(topic_id)

    def learn(self, topic_id: bytes, name: str) -> None:
        names = self._names
        if names.get(topic_id) == name:
            return
        if len(names) >= self.most:
            del names[next(iter(names))]
        names[topic_id] = name


class ResponseEdit:
    """What one request's response needs (`InFlight.authz`)."""

    __slots__ = (
        "all_topics", "code", "message", "names", "old_topic_ids", "refused_part", "scope",
        "tenant",
    )  # fmt: skip

    def __init__(self, scope: Permissions, names: TopicNames) -> None:
        self.scope = scope
        self.names = names
        self.all_topics = False  # a Metadata request for every topic: filter its answer
        # The refused elements of a split request, as a request of their own.
        self.refused_part: Value | None = None
        self.message = ""
        self.code: int | None = None  # the one error of every refused element, if set
        # The caller's tenant (`kproxy.session.tenancy`): names unprefixed, others' left out.
        self.tenant: Tenant | None = None
        # A translated Produce's (`kproxy.session.topic_ids`): target id -> the client's.
        self.old_topic_ids: dict[bytes, bytes] | None = None


def edit_response(
    edit: ResponseEdit, api_key: int, version: int, frame: memoryview, header_version: int
) -> bytes | None:
    """The response frame (no size prefix) as the client is to see it; None: as it came.
    Raises MalformedMessage for a body that does not parse."""
    layout = layout_for(api_key, False, version)
    if layout is None:
        return None
    _, body = parse_response_header(frame, header_version)
    flexible = is_flexible(api_key, version)
    # Records as views of the frame: written back below, before the frame is let go.
    value = LayoutReader(frame, body, flexible, keep_tagged=True, views=True).read(layout)
    changed = False
    if api_key in (METADATA, DESCRIBE_TOPIC_PARTITIONS):
        _learn(edit.names, value)
    if api_key == METADATA and edit.all_topics:
        changed |= _keep(value, "Topics", "Name", lambda n: edit.scope.allows(api_key, TOPIC, n))
    listed = _LISTED.get(api_key)
    if listed is not None:
        array, field, kind = listed
        changed |= _keep(value, array, field, lambda n: edit.scope.allows(api_key, kind, n))
    if edit.refused_part is not None:
        _merge(edit, api_key, version, layout, value)
        changed = True
    if edit.old_topic_ids:
        changed |= _name_old_ids(value, edit.old_topic_ids)
    if edit.tenant is not None:
        rename(api_key, layout, value, edit.tenant.to_tenant)
    elif not changed:
        return None
    return LayoutWriter(flexible, 2 * len(frame) + (1 << 20)).write(layout, value, frame[:body])


def _name_old_ids(value: Value, old_ids: dict[bytes, bytes]) -> bool:
    """A Produce answer's topics named by the ids its request named: whether any was."""
    changed = False
    for topic in value.get("Responses") or ():
        old = old_ids.get(topic.get("TopicId") or b"")
        if old is not None:
            topic["TopicId"] = old
            changed = True
    return changed


def _learn(names: TopicNames, value: Value) -> None:
    for topic in value.get("Topics") or ():
        topic_id, name = topic.get("TopicId"), topic.get("Name")
        if topic_id and topic_id != _ZERO_UUID and name:
            names.learn(topic_id, name)


def _keep(value: Value, array: str, field: str, allowed: Any) -> bool:
    """Keep only the elements whose `field` the caller may describe: whether any went."""
    items = value.get(array)
    if not items:
        return False
    kept = [item for item in items if allowed(item.get(field) or "")]
    value[array] = kept
    return len(kept) != len(items)


def _merge(edit: ResponseEdit, api_key: int, version: int, layout: Any, value: Value) -> None:
    """The refused part's errors into the broker's answer: an element the broker also
    answered (a group of an OffsetFetch whose refused topics went on without it) takes
    the refused elements below it; any other is appended after the broker's, where a
    broker puts those of the entities its ACLs refuse (KafkaApis answers the authorized
    part, then appends the rest)."""
    req_layout = layout_for(api_key, True, version)
    assert req_layout is not None and edit.refused_part is not None
    refusal = Refusal(api_key, edit.message, edit.code).body(edit.refused_part, req_layout, layout)
    _merge_arrays(layout, value, refusal)


def _merge_arrays(layout: Any, answered: Value, refused: Value) -> None:
    for name, typ, _nullable, _default, _entity, _key, sub in layout[0]:
        extra = refused.get(name)
        if typ != "[]struct" or not extra:
            continue
        elements = answered[name] = list(answered.get(name) or ())
        for element in extra:
            match = _same(elements, element, sub)
            if match is None:
                elements.append(element)
            else:
                _merge_arrays(sub, match, element)


def _same(elements: list[Value], refused: Value, layout: Any) -> Value | None:
    """The element of the broker's answer with the identifiers the refused one echoes
    from the request (its group id, topic name...); None when there is none."""
    keys = [
        f[0]
        for f in layout[0]
        if f[0] in refused
        and not f[1].startswith("[]")
        and f[1] != "struct"
        and (f[4] or f[5] or f[0] in IDENTIFIERS)
    ]
    if not keys:
        return None
    for element in elements:
        if all(element.get(k) == refused[k] for k in keys):
            return element
    return None
