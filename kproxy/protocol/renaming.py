"""Every topic, group and transactional id a read message names, renamed in place:
the fields Kafka's schemas annotate (`entityType`), and the ones they leave
unannotated that name them all the same (FindCoordinator's keys, a ConfigResource's
name by its type, a KIP-848 subscription's topic regex).

`rename` calls `fn(kind, name)` for each name, `kind` one of the entity kinds, REGEX
for a topic regex, or MESSAGE for a response's error message (which may quote a
name). When `fn` returns None, the name is not to be seen: the array element that
holds it is dropped (a string array loses the name); a name held outside any array is
emptied.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final

from kproxy.protocol.apis import FIND_COORDINATOR
from kproxy.protocol.entities import CONFIG_KINDS, GROUP, KINDS
from kproxy.protocol.layout_codec import Layout, Value, layout_for
from kproxy.protocol.refusal import CONFIG_RESOURCE_APIS

REGEX: Final = "topic_regex"
MESSAGE: Final = "message"
Rename = Callable[[str, str], str | None]
# Every FindCoordinator key starts with the name of what it finds: a group, a
# transactional id, or a share group's "group:topic id:partition" (KIP-932).
_KEY_FIELDS: Final = frozenset(("Key", "CoordinatorKeys"))


@functools.cache
def renames(api_key: int, is_request: bool, version: int) -> bool:
    """Whether a message of this API and version may name anything `rename` renames
    (a Fetch v13+ names topics by id only: nothing; KIP-516)."""
    layout = layout_for(api_key, is_request, version)
    return layout is not None and _names(api_key, layout)


# A config resource that is a topic's: whether a ResourceName field may name anything
# is asked of the layout alone, with no value to read the type from.
_A_TOPICS_CONFIG: Final = {"ResourceType": next(iter(CONFIG_KINDS))}


def _names(api_key: int, layout: Layout) -> bool:
    for name, _typ, _nullable, _default, entity, _key, sub in layout[0]:
        if sub is not None:
            if _names(api_key, sub):
                return True
        elif _kind(api_key, name, entity, _A_TOPICS_CONFIG):
            return True
    return False


def rename(api_key: int, layout: Layout, value: Value, fn: Rename) -> None:
    """Rename what `value` (read by `layout`, of this API) names, in place."""
    if not _struct(api_key, layout, value, fn):
        _blank(api_key, layout, value)


def _blank(api_key: int, layout: Layout, value: Value) -> None:
    """A struct outside any array that names what is not to be seen: its names emptied."""
    for name, typ, _nullable, _default, entity, _key, _sub in layout[0]:
        if typ == "string" and _kind(api_key, name, entity, value) not in (None, MESSAGE):
            value[name] = ""


def _kind(api_key: int, name: str, entity: str, value: Value) -> str | None:
    kind = KINDS.get(entity)
    if kind is not None:
        return kind
    if name in _KEY_FIELDS and api_key == FIND_COORDINATOR:
        return GROUP  # what the key starts with is renamed alike, whatever its type
    if name == "ResourceName" and api_key in CONFIG_RESOURCE_APIS:
        return CONFIG_KINDS.get(value.get("ResourceType", -1))
    if name == "SubscribedTopicRegex":
        return REGEX
    if name == "ErrorMessage":
        return MESSAGE
    return None


def _struct(api_key: int, layout: Layout, value: Value, fn: Rename) -> bool:
    """Rename one struct's names and those below it; False when one of its own names
    (not a message's) is not to be seen."""
    seen = True
    for name, typ, _nullable, _default, entity, _key, sub in layout[0]:
        item = value.get(name)
        if item is None:
            continue
        if sub is not None:
            if isinstance(item, list):
                value[name] = [e for e in item if _struct(api_key, sub, e, fn)]
            elif not _struct(api_key, sub, item, fn):
                _blank(api_key, sub, item)
            continue
        kind = _kind(api_key, name, entity, value)
        if kind is None:
            continue
        if typ == "string":
            renamed = fn(kind, item)
            if renamed is None:
                if kind == MESSAGE:
                    renamed = ""
                else:
                    seen = False
                    continue
            value[name] = renamed
        elif typ == "[]string":
            value[name] = [r for r in (fn(kind, n) for n in item) if r is not None]
    return seen


def topic_regex(prefix: str, regex: str) -> str:
    """A regex that matches the prefixed names of what `regex` matches: the broker
    matches it against whole topic names (KIP-848, RE2J). The prefix holds only
    Kafka's topic characters, of which only "." means something in a regex."""
    return f"{_escaped(prefix)}(?:{regex})"


def tenant_regex(prefix: str, regex: str) -> str | None:
    """`topic_regex`'s inverse (None: not a regex made by it)."""
    head = f"{_escaped(prefix)}(?:"
    if regex.startswith(head) and regex.endswith(")"):
        return regex[len(head) : -1]
    return None


def _escaped(prefix: str) -> str:
    return prefix.replace(".", "\\.")
