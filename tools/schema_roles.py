"""What each field of a message version is to kproxy: a broker endpoint's host, port,
node id, rack or listener, a partition's leader and epoch, a topic's name or id, an
error code, a configuration entry (`assign_roles`), found by the field names Kafka's
schemas use."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))
from kafka_schema import Message, Node  # noqa: E402

from kproxy.protocol.plan_codes import (  # noqa: E402
    K_CONFIG,
    K_ENDPOINT,
    K_INLINE,
    K_NODE_PARENT,
    K_PARTITION,
    K_TOPIC,
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
    R_PARTITION,
    R_PORT,
    R_RACK,
    R_SENSITIVE,
    R_TOPIC_ID,
    R_TOPIC_NAME,
)

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
