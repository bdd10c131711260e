"""Apache Kafka's message schemas as the generator reads them: the JSON files (with their
comments stripped), each message's valid and flexible versions, and for one version the
tree of its fields (`build_node`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXED_WIDTH = {
    "int8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "float64": 8,
    "uuid": 16,
}


# --- schema loading ----------------------------------------------------------------------
def strip_comments(text: str) -> str:
    """Remove // comments that are outside JSON strings."""
    out: list[str] = []
    in_string = False
    i = 0
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif c == "/" and text.startswith("//", i):
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Versions:
    low: int
    high: int | None  # None = open ended ("N+")

    @staticmethod
    def parse(spec: str | None) -> Versions | None:
        if spec is None or spec == "none":
            return None
        spec = spec.strip()
        if spec.endswith("+"):
            return Versions(int(spec[:-1]), None)
        if "-" in spec:
            a, b = spec.split("-")
            return Versions(int(a), int(b))
        return Versions(int(spec), int(spec))

    def __contains__(self, v: object) -> bool:
        assert isinstance(v, int)
        return v >= self.low and (self.high is None or v <= self.high)


def has_version(spec: Versions | None, v: int) -> bool:
    return spec is not None and v in spec


@dataclass
class Message:
    name: str
    kind: str  # request | response
    api_key: int
    valid: Versions | None
    flexible: Versions | None
    fields: list[dict[str, Any]]
    common: dict[str, dict[str, Any]]
    listeners: list[str] = field(default_factory=list)

    def versions(self) -> list[int]:
        if self.valid is None:
            return []
        assert self.valid.high is not None
        return list(range(self.valid.low, self.valid.high + 1))


def load_dir(path: Path) -> dict[tuple[str, int], Message]:
    out: dict[tuple[str, int], Message] = {}
    for f in sorted(path.glob("*.json")):
        spec = json.loads(strip_comments(f.read_text()))
        if spec.get("type") not in ("request", "response"):
            continue
        common = {s["name"]: s for s in spec.get("commonStructs", [])}
        msg = Message(
            name=spec["name"],
            kind=spec["type"],
            api_key=spec["apiKey"],
            valid=Versions.parse(spec.get("validVersions")),
            flexible=Versions.parse(spec.get("flexibleVersions")),
            fields=spec.get("fields", []),
            common=common,
            listeners=spec.get("listeners", []),
        )
        out[(msg.kind, msg.api_key)] = msg
    return out


# --- the per-version field tree -----------------------------------------------------------
@dataclass
class Node:
    """One field present in one version, with its encoding resolved."""

    name: str
    type: str  # primitive name, "struct", "array"
    elem: str | None  # array element primitive, or None for struct elements
    children: list[Node]  # struct fields (regular)
    tagged: list[tuple[int, Node]]  # struct tagged fields
    nullable: bool
    tag: int | None = None
    spec: dict[str, Any] = field(default_factory=dict)  # the schema's field definition


def build_fields(
    msg: Message, fields: list[dict[str, Any]], v: int, flexible: bool
) -> tuple[list[Node], list[tuple[int, Node]]]:
    regular: list[Node] = []
    tagged: list[tuple[int, Node]] = []
    for f in fields:
        if not has_version(Versions.parse(f.get("versions")), v):
            continue
        tagged_versions = Versions.parse(f.get("taggedVersions"))
        is_tagged = "tag" in f and flexible and has_version(tagged_versions, v)
        node = build_node(msg, f, v, flexible)
        if is_tagged:
            node.tag = int(f["tag"])
            tagged.append((node.tag, node))
        else:
            regular.append(node)
    tagged.sort(key=lambda t: t[0])
    return regular, tagged


def build_node(msg: Message, f: dict[str, Any], v: int, flexible: bool) -> Node:
    typ: str = f["type"]
    nullable = has_version(Versions.parse(f.get("nullableVersions")), v)
    is_array = typ.startswith("[]")
    base = typ[2:] if is_array else typ
    if base in FIXED_WIDTH or base in ("string", "bytes", "records"):
        if is_array:
            return Node(f["name"], "array", base, [], [], nullable, spec=f)
        return Node(f["name"], base, None, [], [], nullable, spec=f)
    sub = f.get("fields")
    if sub is None:
        sub = msg.common[base]["fields"]
    regular, tagged = build_fields(msg, sub, v, flexible)
    struct = Node(f["name"], "struct", None, regular, tagged, nullable, spec=f)
    if is_array:
        return Node(f["name"], "array", None, [struct], [], nullable, spec=f)
    return struct
