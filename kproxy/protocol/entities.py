"""What a message names: its topics, groups and transactional ids, found through the
fields Kafka's schemas annotate (`generated/entities.py`), and the error codes of a
response with the resource each belongs to.

Messages are read whole by their layouts (`kproxy.protocol.layout_codec`), which checks
every length against the bytes left: a hostile body raises MalformedMessage.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from kproxy.protocol.apis import is_flexible
from kproxy.protocol.generated.entities import ENTITY_FIELDS
from kproxy.protocol.layout_codec import Layout, LayoutReader, Value, layout_for

TOPIC: Final = "topic"
GROUP: Final = "group"
TRANSACTIONAL_ID: Final = "transactional_id"
# A resource: (kind, name), as an audit record lists it.
Resource = tuple[str, str]
# The kind of entity a schema field's `entityType` annotation names.
KINDS: Final = {"topicName": TOPIC, "groupId": GROUP, "transactionalId": TRANSACTIONAL_ID}
# The ConfigResources of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs are
# topics (ConfigResource.Type 2) or groups (32) by type, unannotated; brokers and the
# rest are the cluster's.
CONFIG_KINDS: Final = {2: TOPIC, 32: GROUP}
# FindCoordinator's keys are unannotated: KeyType says (0 a group, 1 a transactional
# id; KIP-98, KIP-699).
COORDINATOR_KINDS: Final = {0: GROUP, 1: TRANSACTIONAL_ID}


def read_message(
    api_key: int,
    is_request: bool,
    version: int,
    frame: memoryview,
    body_offset: int,
    max_elements: int | None = None,
    keep_tagged: bool = False,
    views: bool = False,
) -> tuple[Layout, Value] | None:
    """A message body read by its layout (None: kproxy has no layout for it); more than
    `max_elements` array elements raise ProtocolError `too_large`; `keep_tagged` and
    `views`: as `LayoutReader`'s."""
    layout = layout_for(api_key, is_request, version)
    if layout is None:
        return None
    flexible = is_flexible(api_key, version)
    reader = LayoutReader(frame, body_offset, flexible, max_elements, keep_tagged, views)
    return layout, reader.read(layout)


def named_entities(api_key: int, is_request: bool, version: int, value: Value) -> list[Resource]:
    """The topics, groups and transactional ids a read message names, field by field
    as the generated table lists them (a null or empty name is no name)."""
    found: list[Resource] = []
    for path, kind in ENTITY_FIELDS.get((api_key, is_request, version), ()):
        for name in _at(value, path):
            if name:
                found.append((kind, name))
    return found


def _at(value: Any, path: tuple[str, ...]) -> Iterator[str]:
    """Every string at `path` under `value`, through arrays and structs."""
    if value is None:
        return
    if isinstance(value, list):
        for item in value:
            yield from _at(item, path)
        return
    if not path:
        yield value
        return
    yield from _at(value.get(path[0]), path[1:])


def substructs(layout: Layout, value: Value) -> Iterator[tuple[Layout, Value]]:
    """The structs directly under a read struct (array elements one by one), each with
    its layout."""
    for name, _typ, _nullable, _default, _entity, _key, sub in layout[0]:
        item = value.get(name)
        if sub is not None and item is not None:
            for element in item if isinstance(item, list) else (item,):
                yield sub, element


def errors_by_resource(
    layout: Layout, value: Value, resource_of: Any = None
) -> list[tuple[Resource | None, int]]:
    """Every `ErrorCode` of a read response with the resource it is about: the entity
    its struct (or the nearest enclosing one) names, or what `resource_of(fields, value)`
    makes of a struct's other fields (an ACL's or config's ResourceType/ResourceName);
    None for an error about the request as a whole."""
    found: list[tuple[Resource | None, int]] = []
    _errors(layout, value, None, resource_of, found)
    return found


def _errors(
    layout: Layout,
    value: Value,
    around: Resource | None,
    resource_of: Any,
    found: list[tuple[Resource | None, int]],
) -> None:
    fields = layout[0]
    here = around
    for name, _typ, _nullable, _default, entity, _key, _sub in fields:
        kind = KINDS.get(entity)
        item = value.get(name)
        if kind is not None and isinstance(item, str) and item:
            here = (kind, item)
            break
    else:
        if resource_of is not None:
            here = resource_of(value) or around
    for name, typ, _nullable, _default, _entity, _key, _sub in fields:
        if name == "ErrorCode" and typ == "int16":
            found.append((here, value.get(name) or 0))
    for sub, element in substructs(layout, value):
        _errors(sub, element, here, resource_of, found)
