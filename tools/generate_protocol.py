#!/usr/bin/env python3
"""Generate kproxy's protocol tables from Apache Kafka's message schemas.

Input: the `clients/src/main/resources/common/message/*.json` directories of two
Apache Kafka checkouts: a 4.x one (primary) and a 3.9 one, which still defines the
versions that Kafka 4.0 removed (KIP-896). For every version either schema defines,
the 4.x definition wins when both define it.

Output (committed, never edited by hand):

    kproxy/protocol/generated/api_keys.py   every API key: name, versions, headers
    kproxy/protocol/generated/messages.py   walk plans for the messages that carry
                                            broker endpoints or partition leadership
    kproxy/protocol/generated/layouts.py    every field of every message version, for
                                            the responses kproxy writes itself (refusals)
    kproxy/protocol/generated/entities.py   the fields naming a topic, group or
                                            transactional id (`entityType`)

Only names, types, versions and tags are taken from the schemas; no "about" text.
`tools/kafka_schema.py` reads them, `tools/schema_roles.py` decides what each field is to
kproxy, `tools/generate_layouts.py` writes the layouts, `tools/generate_entities.py` the
entity fields, and this script the rest.

Usage:
    python tools/generate_protocol.py [--kafka-4 DIR] [--kafka-3-9 DIR] [--out DIR]

The defaults read the copies in the repository's `schemas/` (see its README: how they
were reduced from Kafka's own files, and from which commits).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "schemas"
DEFAULT_PRIMARY = SCHEMAS / "apache-kafka-4.4"
DEFAULT_LEGACY = SCHEMAS / "apache-kafka-3.9"
DEFAULT_OUT = REPO / "kproxy" / "protocol" / "generated"

# The commits the two schema directories were taken from (schemas/README.md).
PRIMARY_SOURCE = "apache/kafka trunk d79bd502ec7f (4.5.0-SNAPSHOT; message directory = 4.4)"
LEGACY_SOURCE = "apache/kafka 3.9 c821449f"

# --- plan encoding: the codes kproxy/protocol/plan.py reads -----------------------------
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))
from generate_entities import entities_module, entity_paths  # noqa: E402
from generate_layouts import Definitions, LayoutWriter, layouts_module  # noqa: E402
from kafka_schema import (  # noqa: E402
    FIXED_WIDTH,
    Message,
    Node,
    build_fields,
    has_version,
    load_dir,
)
from schema_roles import Roles, assign_roles  # noqa: E402

from kproxy.protocol.plan_codes import (  # noqa: E402
    OP_ARRAY,
    OP_BYTES,
    OP_CARRAY,
    OP_CBYTES,
    OP_CSTR,
    OP_FIXED,
    OP_NSTRUCT,
    OP_STR,
    OP_STRUCT,
    R_NONE,
)

# Messages kproxy walks: every message with broker endpoints (found by the generator and
# checked against this list) plus those that carry partition leadership (docs/protocol.md §2).
WALKED = {
    ("response", 0),  # Produce: KIP-951 NodeEndpoints, CurrentLeader
    ("response", 1),  # Fetch: KIP-951 NodeEndpoints, CurrentLeader
    ("response", 2),  # ListOffsets: leader epoch
    ("response", 3),  # Metadata: Brokers, partition leaders
    ("response", 10),  # FindCoordinator
    ("response", 23),  # OffsetForLeaderEpoch
    ("response", 52),  # Vote (KIP-853)
    ("response", 53),  # BeginQuorumEpoch
    ("response", 54),  # EndQuorumEpoch
    ("response", 55),  # DescribeQuorum
    ("response", 56),  # AlterPartition
    ("response", 59),  # FetchSnapshot
    ("response", 60),  # DescribeCluster
    ("response", 75),  # DescribeTopicPartitions
    ("response", 78),  # ShareFetch (KIP-932)
    ("response", 79),  # ShareAcknowledge (KIP-932)
    ("response", 82),  # UpdateRaftVoter
    ("response", 32),  # DescribeConfigs: config values that name addresses (CONFIG_ENTRIES)
    ("request", 4),  # LeaderAndIsr (3.9 only)
    ("request", 6),  # UpdateMetadata (3.9 only)
    ("request", 53),  # BeginQuorumEpoch LeaderEndpoints
    ("request", 54),  # EndQuorumEpoch LeaderEndpoints
    ("request", 62),  # BrokerRegistration
    ("request", 70),  # ControllerRegistration
    ("request", 80),  # AddRaftVoter
    ("request", 82),  # UpdateRaftVoter
}


# --- plan emission --------------------------------------------------------------------------
class PlanWriter(Definitions):
    """Emits deduplicated struct plans as Python literals."""

    def __init__(self) -> None:
        super().__init__("S")

    def struct(self, node: Node, roles: dict[int, Roles], flexible: bool, path: str) -> str:
        r = roles.get(id(node), Roles())
        fields = [self.field(f, roles, flexible, path, r) for f in node.children]
        if flexible:
            tagged = (
                "{"
                + ", ".join(
                    f"{tag}: {self.field(f, roles, flexible, path, r)}" for tag, f in node.tagged
                )
                + "}"
            )
        else:
            tagged = "None"
        ftuple = "(" + "".join(f + ", " for f in fields) + ")"
        return self.name(f"({ftuple}, {tagged}, {r.kind}, {path!r})")

    def field(self, f: Node, roles: dict[int, Roles], flexible: bool, path: str, r: Roles) -> str:
        role = r.by_field.get(id(f), R_NONE)
        sub_path = f"{path}.{f.name}" if path else f.name
        if f.type == "struct":
            op = OP_NSTRUCT if f.nullable else OP_STRUCT
            return f"({op}, {role}, {self.struct(f, roles, flexible, sub_path)}, {f.name!r})"
        if f.type == "array":
            op = OP_CARRAY if flexible else OP_ARRAY
            if f.elem is None:
                elem = self.struct(f.children[0], roles, flexible, sub_path + "[]")
                return f"({op}, {role}, (-1, {elem}), {f.name!r})"
            return f"({op}, {role}, {self.elem(f.elem, flexible)}, {f.name!r})"
        return self.primitive(f.type, role, f.name, flexible)

    def elem(self, typ: str, flexible: bool) -> str:
        if typ in FIXED_WIDTH:
            return f"({OP_FIXED}, {FIXED_WIDTH[typ]})"
        if typ == "string":
            return f"({OP_CSTR if flexible else OP_STR}, 0)"
        return f"({OP_CBYTES if flexible else OP_BYTES}, 0)"

    def primitive(self, typ: str, role: int, name: str, flexible: bool) -> str:
        if typ in FIXED_WIDTH:
            return f"({OP_FIXED}, {role}, {FIXED_WIDTH[typ]}, {name!r})"
        if typ == "string":
            return f"({OP_CSTR if flexible else OP_STR}, {role}, 0, {name!r})"
        return f"({OP_CBYTES if flexible else OP_BYTES}, {role}, 0, {name!r})"


HEADER = '''"""GENERATED by tools/generate_protocol.py from the Apache Kafka message schemas.

Sources: {primary}
         {legacy} (for the versions Kafka 4.0 removed)
Do not edit; regenerate with `python tools/generate_protocol.py`.
"""
'''


def merged_versions(
    key: tuple[str, int],
    primary: dict[tuple[str, int], Message],
    legacy: dict[tuple[str, int], Message],
) -> dict[int, Message]:
    """Version -> the schema that defines it (4.x wins over 3.9)."""
    out: dict[int, Message] = {}
    if key in legacy:
        for v in legacy[key].versions():
            out[v] = legacy[key]
    if key in primary:
        for v in primary[key].versions():
            out[v] = primary[key]
    return dict(sorted(out.items()))


def generate(primary_dir: Path, legacy_dir: Path) -> dict[str, str]:
    primary = load_dir(primary_dir)
    legacy = load_dir(legacy_dir)
    header = HEADER.format(primary=PRIMARY_SOURCE, legacy=LEGACY_SOURCE)

    # ---- api_keys.py
    lines = [header, "# api key -> (name, versions, first flexible version or -1,"]
    lines.append("#            {version: (request header version, response header version)},")
    lines.append("#            the listeners that serve it: broker, controller, zkBroker)")
    lines.append(
        "ApiRow = tuple[str, tuple[int, ...], int, dict[int, tuple[int, int]], tuple[str, ...]]"
    )
    lines.append("API_KEYS: dict[int, ApiRow] = {")
    keys = sorted({k for (_, k) in list(primary) + list(legacy)})
    for k in keys:
        req = merged_versions(("request", k), primary, legacy)
        name_msg = primary.get(("request", k)) or legacy[("request", k)]
        name = name_msg.name.removesuffix("Request")
        # 4.x names a removed API with validVersions "none"; keep the 3.9 name then.
        if not req:
            continue
        hdrs: dict[int, tuple[int, int]] = {}
        first_flex = -1
        for v, m in req.items():
            flexible = has_version(m.flexible, v)
            if flexible and first_flex < 0:
                first_flex = v
            req_hdr = 2 if flexible else 1
            if k == 7 and v == 0:
                req_hdr = 0  # ControlledShutdown v0 used request header v0 (3.9)
            resp_hdr = 1 if flexible else 0
            if k == 18:
                resp_hdr = 0  # KIP-511: the ApiVersions response always uses header v0
            hdrs[v] = (req_hdr, resp_hdr)
        versions = tuple(req)
        hdr_txt = ", ".join(f"{v}: {h}" for v, h in hdrs.items())
        # Which listeners serve the API: from the schema that defines its newest version
        # (4.x names none for the APIs it removed; 3.9 says zkBroker for those).
        served = tuple(sorted(req[versions[-1]].listeners))
        lines.append(f"    {k}: ({name!r}, {versions!r}, {first_flex}, {{{hdr_txt}}}, {served!r}),")
    lines.append("}")
    api_keys_py = "\n".join(lines) + "\n"

    # ---- messages.py
    writer = PlanWriter()
    layout_writer = LayoutWriter()
    layouts: list[str] = []
    entities: list[str] = []
    plans: list[str] = []
    rules: list[str] = []
    every = sorted(set(primary) | set(legacy), key=lambda t: (t[1], t[0]))
    found_endpoint_messages: set[tuple[str, int]] = set()
    for key in every:
        kind, api_key = key
        by_version = merged_versions(key, primary, legacy)
        walked = key in WALKED
        rule_versions: dict[tuple[str, str], list[int]] = {}
        for v, msg in by_version.items():
            flexible = has_version(msg.flexible, v)
            regular, tagged = build_fields(msg, msg.fields, v, flexible)
            top = Node(msg.name, "struct", None, regular, tagged, False)
            layout = layout_writer.struct(regular, tagged)
            layouts.append(f"    ({api_key}, {kind == 'request'}, {v}): {layout},")
            named = entity_paths(regular, tagged, f"{msg.name} v{v}")
            if named:
                entities.append(f"    ({api_key}, {kind == 'request'}, {v}): {tuple(named)!r},")
            found: list[tuple[str, str]] = []
            roles = assign_roles(msg, top, walked, found)
            for path, desc in found:
                rule_versions.setdefault((path, desc), []).append(v)
            if found:
                found_endpoint_messages.add(key)
            if walked:
                plan = writer.struct(top, roles, flexible, "")
                plans.append(f"    ({api_key}, {kind == 'request'}, {v}): {plan},")
        for (path, desc), vs in rule_versions.items():
            rules.append(f"    ({api_key}, {kind!r}, {vs[0]}, {vs[-1]}, {path!r}, {desc!r}),")
    missing = found_endpoint_messages - WALKED
    if missing:
        raise SystemExit(f"messages with broker endpoints that kproxy does not walk: {missing}")

    out = [
        header,
        "# fmt: off",
        "# ruff: noqa",
        "# Struct plan: (fields, tagged {tag: field} or None, kind, path)",
    ]
    out.append("# Field: (op, role, arg, name); see kproxy/protocol/plan.py")
    out.append("from typing import Any")
    out.append("")
    out.append("Plan = tuple[Any, ...]")
    for name, literal in writer.order:
        out.append(f"{name}: Plan = {literal}")
    out.append("")
    out.append("# (api key, is request, version) -> top-level struct plan")
    out.append("PLANS: dict[tuple[int, bool, int], Plan] = {")
    out.extend(plans)
    out.append("}")
    out.append("")
    out.append("# Every broker endpoint in every message, as derived from the schemas:")
    out.append("# (api key, kind, first version, last version, path, captured fields)")
    out.append("ENDPOINT_RULES: list[tuple[int, str, int, int, str, str]] = [")
    out.extend(rules)
    out.append("]")
    messages_py = "\n".join(out) + "\n"
    return {
        "api_keys.py": api_keys_py,
        "messages.py": messages_py,
        "layouts.py": layouts_module(header, layout_writer, layouts),
        "entities.py": entities_module(header, entities),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--kafka-4", type=Path, default=DEFAULT_PRIMARY, help="4.x message directory")
    ap.add_argument("--kafka-3-9", type=Path, default=DEFAULT_LEGACY, help="3.9 message directory")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    files = generate(args.kafka_4, args.kafka_3_9)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text)
    print(f"wrote {', '.join(files)} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
