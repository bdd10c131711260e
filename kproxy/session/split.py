"""A request split by what the caller may touch (sans-IO): the part that goes on to the
broker, and the part refused, at any depth (`kproxy.session.authorize`).

A struct whose own entity (its topic name or id, its group id...) is refused is
refused whole, with everything below it. Otherwise each of its arrays is split element
by element: a topic refused in an OffsetFetch group the caller may read leaves the
group going on without that topic. Refused elements are kept, as a request of their
own, for kproxy to answer in the broker's response (`kproxy.session.response_edit`).

An array is split only where the response answers it element by element (an array
of the response echoes it: `refusal.source_array`), since only there can a refused
element's error be said; a refused element elsewhere (a topic of a
ConsumerGroupHeartbeat's subscription) makes the request unsplittable, answered whole.
The forgotten topics of an incremental Fetch (KIP-227) are the exception: nothing
answers them, and a refused one is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

from kproxy.protocol.apis import FIND_COORDINATOR
from kproxy.protocol.entities import CONFIG_KINDS, COORDINATOR_KINDS, KINDS, TOPIC
from kproxy.protocol.layout_codec import Layout, Value
from kproxy.protocol.refusal import CONFIG_RESOURCE_APIS, source_array

_ZERO_UUID: Final = bytes(16)
_DROPPED_WHEN_REFUSED: Final = frozenset(("ForgottenTopicsData",))
# What a struct names: nothing, only allowed, only refused, or both below it.
NONE, ALLOWED, REFUSED, MIXED = 0, 1, 2, 3
# An entity: (kind, name), the name None for a topic id kproxy has not seen.
Entity = tuple[str, str | None]


class Split:
    """Splits one request; `refused` lists what it refused ("kind:name"),
    `unsplittable` whether a refused element lies where no answer can carry its error."""

    __slots__ = ("allows", "api_key", "refused", "topic_name", "unsplittable")

    def __init__(
        self,
        api_key: int,
        allows: Callable[[str, str], bool],
        topic_name: Callable[[bytes], str | None],
    ) -> None:
        self.api_key = api_key
        self.allows = allows
        self.topic_name = topic_name
        self.refused: list[str] = []
        self.unsplittable = False

    def coordinator_kind(self, request: Value) -> str | None:
        """The kind of a FindCoordinator's keys (None: another API or key type)."""
        if self.api_key != FIND_COORDINATOR:
            return None
        return COORDINATOR_KINDS.get(request.get("KeyType", 0))

    def struct(
        self, layout: Layout, value: Value, answer: Layout | None, top: bool = False
    ) -> tuple[int, Value, Value]:
        """(what `value` names, the part that goes on, the part refused); `answer` is
        the response struct that answers it (None: none does). At the top, the
        request's own group or transactional id is left to the caller."""
        if not top:
            own = self._own(layout, value)
            if own & REFUSED:  # its own topic or group: all of it, whatever is below
                return REFUSED, {}, value
        else:
            own = NONE
        seen = own
        kept: Value = dict(value)
        refused: Value = {k: [] if isinstance(v, list) else v for k, v in value.items()}
        answers = _answering(layout, answer)
        for name, typ, _nullable, _default, entity, _key, sub in layout[0]:
            item = value.get(name)
            if not typ.startswith("[]") or not item:
                if typ == "struct" and item is not None and sub is not None:
                    seen |= self._inner(sub, item)
                continue
            kind = KINDS.get(entity) or (
                self.coordinator_kind(value) if name == "CoordinatorKeys" else None
            )
            if sub is None and kind is None:
                continue
            keep, drop, states = self._array(item, kind, sub, answers.get(name))
            seen |= states
            if drop:
                kept[name] = keep
                if name in _DROPPED_WHEN_REFUSED:
                    continue
                refused[name] = drop
                if name not in answers:
                    self.unsplittable = True
        return seen, kept, refused

    def _array(
        self, items: list[Any], kind: str | None, sub: Layout | None, answer: Layout | None
    ) -> tuple[list[Any], list[Any], int]:
        keep: list[Any] = []
        drop: list[Any] = []
        seen = NONE
        for item in items:
            if sub is None:  # an array of names (DescribeGroups' Groups)
                state = self._one(kind, item) if kind is not None else NONE
                whole, part = item, item
            else:
                state, whole, part = self.struct(sub, item, answer)
            seen |= state
            if state == REFUSED:
                drop.append(part)
            else:
                keep.append(whole)
                if state == MIXED:
                    drop.append(part)
        return keep, drop, seen

    def _own(self, layout: Layout, value: Value) -> int:
        seen = NONE
        for kind, name in self._own_entities(layout, value):
            seen |= self._one(kind, name)
        return seen

    def _own_entities(self, layout: Layout, value: Value) -> Iterator[Entity]:
        if self.api_key in CONFIG_RESOURCE_APIS and "ResourceType" in value:
            kind = CONFIG_KINDS.get(value["ResourceType"])
            if kind is not None and value.get("ResourceName"):
                yield kind, value["ResourceName"]
            return
        for name, typ, _nullable, _default, entity, _key, _sub in layout[0]:
            item = value.get(name)
            kind = KINDS.get(entity)
            if typ == "string" and kind is not None and item:
                yield kind, item
            elif name == "TopicId" and typ == "uuid" and item and item != _ZERO_UUID:
                yield TOPIC, self.topic_name(item)

    def _inner(self, layout: Layout, value: Value) -> int:
        """What a struct field (not an array: a Streams topology) names, all of it."""
        seen = NONE
        for kind, name in self._named(layout, value):
            seen |= self._one(kind, name)
        if seen & REFUSED:
            self.unsplittable = True  # nothing answers its parts
        return seen

    def _named(self, layout: Layout, value: Value) -> Iterator[Entity]:
        yield from self._own_entities(layout, value)
        for _name, typ, _n, _d, entity, _k, sub in layout[0]:
            item = value.get(_name)
            kind = KINDS.get(entity)
            if typ.startswith("[]") and kind is not None and sub is None:
                yield from ((kind, name) for name in item or () if name)
            elif sub is not None and item is not None:
                for element in item if isinstance(item, list) else (item,):
                    yield from self._named(sub, element)

    def _one(self, kind: str, name: str | None) -> int:
        if not name and name is not None:
            return NONE
        if name is not None and self.allows(kind, name):
            return ALLOWED
        self.refused.append(_label(kind, name))
        return REFUSED


def _label(kind: str, name: str | None) -> str:
    return f"{kind}:{name if name is not None else '(unknown topic id)'}"


def _answering(request: Layout, answer: Layout | None) -> dict[str, Layout | None]:
    """The request's arrays that a response array answers element by element, each with
    the layout of the answering elements."""
    if answer is None:
        return {}
    fields = {f[0]: f for f in request[0]}
    found: dict[str, Layout | None] = {}
    for name, typ, _nullable, _default, _entity, _key, sub in answer[0]:
        if typ == "[]struct" and sub is not None:
            source = source_array(name, sub, fields)
            if source is not None:
                found[str(source[0])] = sub
    return found
