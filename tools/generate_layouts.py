"""Message layouts for kproxy's refusals: every field of every message version.

The walk plans (`generate_protocol.py`) keep only what kproxy reads from the messages
it walks. A request refused by a listener's API policy is answered with the response a
broker would send (`kproxy/protocol/refusal.py`), so that response must be encodable
for any API: these layouts list every field of every version with its type,
nullability, default, `entityType` and `mapKey`, nothing of its encoding (the codec
takes `flexible` from the API table).

Written as `kproxy/protocol/generated/layouts.py`:

    Struct: ((field, ...), {tag: field, ...})
    Field:  (name, type, nullable, default, entity, is_key, struct or None)

`type` is a primitive name (`int32`, `string`, `records`...), `struct`, or `[]` + an
element type (`[]struct` for arrays of structs). `default` is the schema's default as a
Python value, or None where the schema gives none ("null" defaults are kept as the
string "null").
"""

from __future__ import annotations

from typing import Any


def _default(spec: dict[str, Any], typ: str) -> Any:
    raw = spec.get("default")
    if raw is None:
        return None
    text = str(raw).strip()
    if text == "null":
        return "null"
    if typ == "bool":
        return text.lower() == "true"
    if typ in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return int(text, 0)
    if typ == "float64":
        return float(text)
    return text


class Definitions:
    """Python literals named once each (`prefix` + a number), in the order first seen,
    so that a struct shared by many versions is written once."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.defs: dict[str, str] = {}  # literal -> name
        self.order: list[tuple[str, str]] = []

    def name(self, literal: str) -> str:
        name = self.defs.get(literal)
        if name is None:
            name = f"{self.prefix}{len(self.defs)}"
            self.defs[literal] = name
            self.order.append((name, literal))
        return name


class LayoutWriter(Definitions):
    """Emits deduplicated struct layouts as Python literals."""

    def __init__(self) -> None:
        super().__init__("L")

    def struct(self, fields: list[Any], tagged: list[tuple[int, Any]]) -> str:
        regular = "".join(self.field(f) + ", " for f in fields)
        tags = ", ".join(f"{tag}: {self.field(f)}" for tag, f in tagged)
        return self.name(f"(({regular}), {{{tags}}})")

    def field(self, node: Any) -> str:
        spec: dict[str, Any] = node.spec
        entity = spec.get("entityType", "")
        key = bool(spec.get("mapKey", False))
        if node.type == "struct":
            typ, sub = "struct", self.struct(node.children, node.tagged)
        elif node.type == "array" and node.elem is None:
            elem = node.children[0]
            typ, sub = "[]struct", self.struct(elem.children, elem.tagged)
        elif node.type == "array":
            typ, sub = "[]" + node.elem, "None"
        else:
            typ, sub = node.type, "None"
        base = typ.removeprefix("[]")
        default = _default(spec, base) if not typ.startswith("[]") else None
        if typ.startswith("[]") and spec.get("default") == "null":
            default = "null"
        return f"({node.name!r}, {typ!r}, {node.nullable}, {default!r}, {entity!r}, {key}, {sub})"


def layouts_module(header: str, writer: LayoutWriter, rows: list[str]) -> str:
    out = [
        header,
        "# fmt: off",
        "# ruff: noqa",
        "# Struct: ((field, ...), {tag: field}); see tools/generate_layouts.py",
        "# Field: (name, type, nullable, default, entity, is_key, struct or None)",
        "from typing import Any",
        "",
        "Layout = tuple[Any, ...]",
    ]
    for name, literal in writer.order:
        out.append(f"{name}: Layout = {literal}")
    out.append("")
    out.append("# (api key, is request, version) -> top-level struct layout")
    out.append("LAYOUTS: dict[tuple[int, bool, int], Layout] = {")
    out.extend(rows)
    out.append("}")
    return "\n".join(out) + "\n"
