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

Only names, types, versions and tags are taken from the schemas; no "about" text.

Usage:
    python tools/generate_protocol.py [--kafka-4 DIR] [--kafka-3-9 DIR] [--out DIR]

The defaults read the copies in the repository's `schemas/` (see its README: how they
were reduced from Kafka's own files, and from which commits).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from generate_layouts import Definitions, LayoutWriter, layouts_module  # noqa: E402

from kproxy.protocol.plan_codes import (  # noqa: E402
    K_CONFIG,
    K_ENDPOINT,
    K_INLINE,
    K_NODE_PARENT,
    K_PARTITION,
    K_TOPIC,
    OP_ARRAY,
    OP_BYTES,
    OP_CARRAY,
    OP_CBYTES,
    OP_CSTR,
    OP_FIXED,
    OP_NSTRUCT,
    OP_STR,
    OP_STRUCT,
    R_CONFIG_NAME,
    R_CONFIG_VALUE,
    R_ERROR,
    R_HINT_LEADER_EPOCH,
    R_HINT_LEADER_ID,
    R_HOST,
    R_LEADER_EPOCH,
    R_LEADER_ID,
    R_LISTENER,
    R_NODE_ID,
    R_NONE,
    R_PARTITION,
    R_PORT,
    R_RACK,
    R_SENSITIVE,
    R_TOPIC_ID,
    R_TOPIC_NAME,
)

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

HOST_FIELDS = ("Host", "HostName", "V0Host")
PORT_FIELDS = ("Port", "V0Port")
ENDPOINT_ID_FIELDS = ("NodeId", "BrokerId", "LeaderId", "Id")
PARENT_ID_FIELDS = ("NodeId", "BrokerId", "Id", "VoterId", "ControllerId")
LISTENER_FIELDS = ("Name", "Listener")
OTHER_NODE_ENDPOINTS = ("LeaderEndpoints",)  # endpoints of a node other than the parent's id
PARTITION_FIELDS = ("PartitionIndex", "Index", "Partition")
LEADER_FIELDS = ("LeaderId", "Leader")
TOPIC_NAME_FIELDS = ("Name", "Topic", "TopicName")

# Structs with Host and Port that are not Kafka brokers or controllers: Kafka Streams
# application instances (KIP-1071 interactive queries). They are left alone.
NOT_BROKER_ENDPOINTS = {
    ("StreamsGroupHeartbeatRequest", "UserEndpoint"),
    ("StreamsGroupHeartbeatResponse", "PartitionsByUserEndpoint[].UserEndpoint"),
    ("StreamsGroupDescribeResponse", "Groups[].Members[].UserEndpoint"),
}

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


def _has(spec: Versions | None, v: int) -> bool:
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
        if not _has(Versions.parse(f.get("versions")), v):
            continue
        tagged_versions = Versions.parse(f.get("taggedVersions"))
        is_tagged = "tag" in f and flexible and _has(tagged_versions, v)
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
    nullable = _has(Versions.parse(f.get("nullableVersions")), v)
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


# --- roles ----------------------------------------------------------------------------------
def struct_fields(node: Node) -> list[Node]:
    return node.children + [n for _, n in node.tagged]


def child_struct(n: Node) -> Node | None:
    if n.type == "struct":
        return n
    if n.type == "array" and n.elem is None:
        return n.children[0]
    return None


def is_endpoint(node: Node) -> bool:
    names = {f.name: f for f in struct_fields(node)}
    host = next((names[h] for h in HOST_FIELDS if h in names), None)
    port = next((names[p] for p in PORT_FIELDS if p in names), None)
    return (
        host is not None
        and host.type == "string"
        and port is not None
        and port.type in ("int32", "uint16")
    )


# Messages whose (Name, Value) structs are configuration entries: a broker's
# `listeners`, `advertised.listeners` or `controller.quorum.voters` is a host:port in a
# string, which no Host/Port rule sees (kproxy/protocol/config_addresses.py decides
# which values are redacted).
CONFIG_ENTRIES = {"DescribeConfigsResponse"}


@dataclass
class Roles:
    kind: int = 0
    by_field: dict[int, int] = field(default_factory=dict)  # id(Node) -> role


def assign_roles(
    msg: Message, top: Node, leadership: bool, rules: list[tuple[str, str]]
) -> dict[int, Roles]:
    """Mark endpoint, node-parent, partition, topic and inline-leader structs.

    Returns id(struct Node) -> Roles. `rules` collects (path, description) of endpoints.
    """
    out: dict[int, Roles] = {}

    def visit(node: Node, path: str, in_partition: bool) -> bool:
        """Return True if the subtree contains a partition struct."""
        r = Roles()
        out[id(node)] = r
        fields = struct_fields(node)
        names = {f.name: f for f in fields}
        endpoint = is_endpoint(node) and (msg.name, path) not in NOT_BROKER_ENDPOINTS
        partition = (
            leadership
            and any(p in names and names[p].type == "int32" for p in PARTITION_FIELDS)
            and any(
                x in names
                for x in ("ErrorCode", "LeaderId", "Leader", "LeaderEpoch", "CurrentLeader")
            )
        )
        if endpoint:
            r.kind |= K_ENDPOINT
            for f in fields:
                if f.name in HOST_FIELDS and f.type == "string":
                    r.by_field[id(f)] = R_HOST
                elif f.name in PORT_FIELDS and f.type in ("int32", "uint16"):
                    r.by_field[id(f)] = R_PORT
                elif f.name in LISTENER_FIELDS and f.type == "string":
                    r.by_field[id(f)] = R_LISTENER
                elif f.name == "Rack" and f.type == "string":
                    r.by_field[id(f)] = R_RACK
                elif f.name == "ErrorCode" and f.type == "int16":
                    r.by_field[id(f)] = R_ERROR
            for name in ENDPOINT_ID_FIELDS:
                if name in names and names[name].type == "int32":
                    r.by_field[id(names[name])] = R_NODE_ID
                    break
            desc = ",".join(f"{f.name}:{f.type}" for f in fields if id(f) in r.by_field)
            rules.append((path, desc))
        if (
            msg.name in CONFIG_ENTRIES
            and "Name" in names
            and "Value" in names
            and names["Name"].type == names["Value"].type == "string"
        ):
            r.kind |= K_CONFIG
            r.by_field[id(names["Name"])] = R_CONFIG_NAME
            r.by_field[id(names["Value"])] = R_CONFIG_VALUE
            if "IsSensitive" in names and names["IsSensitive"].type == "bool":
                r.by_field[id(names["IsSensitive"])] = R_SENSITIVE
        if partition:
            r.kind |= K_PARTITION
            for f in fields:
                if f.name in PARTITION_FIELDS and f.type == "int32":
                    r.by_field[id(f)] = R_PARTITION
                elif f.name == "ErrorCode" and f.type == "int16":
                    r.by_field[id(f)] = R_ERROR
                elif f.name in LEADER_FIELDS and f.type == "int32":
                    r.by_field[id(f)] = R_LEADER_ID
                elif f.name == "LeaderEpoch" and f.type == "int32":
                    r.by_field[id(f)] = R_LEADER_EPOCH
                elif f.name in TOPIC_NAME_FIELDS and f.type == "string":
                    r.by_field[id(f)] = R_TOPIC_NAME
                elif f.name == "TopicId" and f.type == "uuid":
                    r.by_field[id(f)] = R_TOPIC_ID
        has_partition_child = False
        has_endpoint_child = False
        for f in fields:
            sub = child_struct(f)
            if sub is None:
                continue
            sub_path = f"{path}.{f.name}" if path else f.name
            if f.type == "array":
                sub_path += "[]"
            if partition and f.type == "struct" and f.name == "CurrentLeader":
                # KIP-951: the leader hint of this partition; its values belong to the
                # enclosing partition's observation.
                cr = Roles(kind=K_INLINE)
                out[id(sub)] = cr
                for g in struct_fields(sub):
                    if g.name == "LeaderId":
                        cr.by_field[id(g)] = R_HINT_LEADER_ID
                    elif g.name == "LeaderEpoch":
                        cr.by_field[id(g)] = R_HINT_LEADER_EPOCH
                continue
            if visit(sub, sub_path, in_partition or partition):
                has_partition_child = True
            # Begin/EndQuorumEpochRequest.LeaderEndpoints are the *leader's* listeners
            # (the leader is named per partition); the enclosing VoterId is the voter
            # receiving the request, so it must not become their node id.
            if out[id(sub)].kind & K_ENDPOINT and f.name not in OTHER_NODE_ENDPOINTS:
                has_endpoint_child = True
            if out[id(sub)].kind & K_PARTITION:
                has_partition_child = True
        if has_endpoint_child and not endpoint:
            r.kind |= K_NODE_PARENT
            for name in PARENT_ID_FIELDS:
                if name in names and names[name].type == "int32":
                    r.by_field[id(names[name])] = R_NODE_ID
                    break
        if has_partition_child and leadership and not partition:
            r.kind |= K_TOPIC
            for f in fields:
                if f.name in TOPIC_NAME_FIELDS and f.type == "string":
                    r.by_field[id(f)] = R_TOPIC_NAME
                elif f.name == "TopicId" and f.type == "uuid":
                    r.by_field[id(f)] = R_TOPIC_ID
        return has_partition_child or partition

    visit(top, "", False)
    return out


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
            flexible = _has(m.flexible, v)
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
            flexible = _has(msg.flexible, v)
            regular, tagged = build_fields(msg, msg.fields, v, flexible)
            top = Node(msg.name, "struct", None, regular, tagged, False)
            layout = layout_writer.struct(regular, tagged)
            layouts.append(f"    ({api_key}, {kind == 'request'}, {v}): {layout},")
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
