"""The fields that name a topic, a group or a transactional id, in every message version.

Kafka's message schemas annotate such fields with `entityType` (`topicName`, `groupId`,
`transactionalId`). kproxy reads them where it names what a request touches (the audit
trail, `kproxy.session.audit`) and, later, what a principal may touch. Found here from
the annotations, so every API and version is covered; a new version that adds one
changes the generated table.

Written as `kproxy/protocol/generated/entities.py`:

    (api key, is request, version) -> ((path, kind), ...)

`path` is the field names from the message's top level down to the annotated field
(through arrays and structs); `kind` is `topic`, `group` or `transactional_id`.
Only messages with at least one such field are listed.
"""

from __future__ import annotations

from typing import Any

KINDS = {"topicName": "topic", "groupId": "group", "transactionalId": "transactional_id"}


def entity_paths(
    regular: list[Any], tagged: list[tuple[int, Any]], where: str, prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], str]]:
    """The annotated fields under one struct, in field order. A tagged one is refused:
    kproxy's layout reader skips tagged fields, so such a field would go unseen."""
    for _tag, node in tagged:
        if _names_entities(node):
            raise SystemExit(f"{where}: tagged field {node.name} names a topic, group or id")
    found: list[tuple[tuple[str, ...], str]] = []
    for node in regular:
        path = (*prefix, node.name)
        kind = KINDS.get(node.spec.get("entityType", ""))
        if kind is not None:
            found.append((path, kind))
        if node.type == "struct":
            found.extend(entity_paths(node.children, node.tagged, where, path))
        elif node.type == "array" and node.elem is None:
            elem = node.children[0]
            found.extend(entity_paths(elem.children, elem.tagged, where, path))
    return found


def _names_entities(node: Any) -> bool:
    if node.spec.get("entityType", "") in KINDS:
        return True
    children = (
        node.children[0].children if node.type == "array" and node.children else node.children
    )
    return any(_names_entities(child) for child in children)


def entities_module(header: str, rows: list[str]) -> str:
    out = [
        header,
        "# fmt: off",
        "# ruff: noqa",
        "# (api key, is request, version) -> ((path, kind), ...); see tools/generate_entities.py",
        "",
        "EntityFields = tuple[tuple[tuple[str, ...], str], ...]",
        "ENTITY_FIELDS: dict[tuple[int, bool, int], EntityFields] = {",
        *rows,
        "}",
    ]
    return "\n".join(out) + "\n"
