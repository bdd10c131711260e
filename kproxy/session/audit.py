"""The audit trail's share of a session: which requests change the cluster, what they
name, and what the broker answered (sans-IO; the runtime logs, counts and writes each
record as an `audit` event).

Which requests change the cluster is one documented table, `CHANGES` (Kafka's schemas
do not say it). The resources a request names are the topics, groups and transactional
ids its schema annotates (`kproxy.protocol.entities`), plus what some admin requests
name in fields of their own: the ResourceType/ResourceName of ACLs and configs, the
entities of a client quota, the user of SCRAM credentials. Delegation tokens are
recorded by API only: their ids and HMACs are secrets.

The outcome is read from every ErrorCode of the response: `success` when all are 0,
`failure` when none is, `partial` otherwise (`unread` past `READ_LIMIT`); `failed`
lists the resources whose error is not 0 (all of them when the request as a whole
failed).
"""

from __future__ import annotations

from typing import Any, Final

from kproxy.protocol.apis import api_name
from kproxy.protocol.entities import (
    GROUP,
    TOPIC,
    TRANSACTIONAL_ID,
    Resource,
    errors_by_resource,
    named_entities,
    read_message,
    substructs,
)
from kproxy.protocol.errors import MalformedMessage, ProtocolError
from kproxy.protocol.headers import RequestHeader, parse_response_header
from kproxy.protocol.layout_codec import Layout, Value

OFFSET_COMMIT: Final = 8
# A change request or response is read whole into Python values: beyond this size, or
# this many array elements (topics, partitions, configs... in all), it is not (the
# request is refused, closing its connection; the response's outcome is `unread`), so
# that no client can make kproxy hold or walk an unbounded structure.
READ_LIMIT: Final = 8 << 20
ELEMENT_LIMIT: Final = 50_000
# The requests that change the cluster, by API key: what each changes.
CHANGES: Final[dict[int, str]] = {
    OFFSET_COMMIT: "offsets",  # only a commit from outside the group (`_standalone_commit`)
    19: "topics",  # CreateTopics
    20: "topics",  # DeleteTopics
    21: "records",  # DeleteRecords
    30: "acls",  # CreateAcls
    31: "acls",  # DeleteAcls
    33: "configs",  # AlterConfigs
    34: "replica log dirs",  # AlterReplicaLogDirs
    37: "partitions",  # CreatePartitions
    38: "delegation tokens",  # CreateDelegationToken
    39: "delegation tokens",  # RenewDelegationToken
    40: "delegation tokens",  # ExpireDelegationToken
    42: "groups",  # DeleteGroups
    43: "leaders",  # ElectLeaders
    44: "configs",  # IncrementalAlterConfigs
    45: "reassignments",  # AlterPartitionReassignments
    47: "offsets",  # OffsetDelete
    49: "quotas",  # AlterClientQuotas
    51: "scram credentials",  # AlterUserScramCredentials
    57: "features",  # UpdateFeatures
    64: "brokers",  # UnregisterBroker
    80: "kraft voters",  # AddRaftVoter (KIP-853)
    81: "kraft voters",  # RemoveRaftVoter (KIP-853)
    91: "offsets",  # AlterShareGroupOffsets (KIP-932)
    92: "offsets",  # DeleteShareGroupOffsets (KIP-932)
}
CHANGE_APIS: Final = frozenset(CHANGES)

AUTHENTICATE: Final = "authenticate"
CHANGE: Final = "change"
REFUSE: Final = "refuse"

# ResourceType codes: of ACLs (CreateAcls, DeleteAcls) and of configs (AlterConfigs,
# IncrementalAlterConfigs); Kafka's ResourceType and ConfigResource.Type.
_ACL_TYPES: Final = {
    1: "any",
    2: TOPIC,
    3: GROUP,
    4: "cluster",
    5: TRANSACTIONAL_ID,
    6: "delegation_token",
    7: "user",
}
_CONFIG_TYPES: Final = {2: TOPIC, 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: GROUP}
_ACL_APIS: Final = frozenset((30, 31))
_CONFIG_APIS: Final = frozenset((33, 44))


class AuditRecord:
    """One audited request: a change with its outcome, or a refusal."""

    __slots__ = (
        "action",
        "api_key",
        "by_rules",
        "client_id",
        "errors",
        "failed",
        "outcome",
        "resources",
        "version",
    )

    def __init__(
        self,
        action: str,
        api_key: int,
        version: int,
        client_id: str | None,
        resources: list[str],
    ) -> None:
        self.action = action
        self.api_key = api_key
        self.version = version
        self.client_id = client_id
        self.resources = resources  # "kind:name", in the order the request names them
        self.outcome = "refused" if action == REFUSE else "pending"
        self.failed: list[str] = []
        self.errors: list[int] = []  # the distinct non-zero error codes, sorted
        # A refusal by the listener's authorization rules (not its API policy): the
        # resources are those refused.
        self.by_rules = False

    @property
    def api(self) -> str:
        return api_name(self.api_key)


def audit_request(
    hdr: RequestHeader, frame: memoryview, action: str = CHANGE
) -> AuditRecord | None:
    """The record of a request that changes the cluster (None: this one does not, such
    as a group member's own OffsetCommit). Raises MalformedMessage for a body that does
    not parse: such a request is refused, never forwarded unread."""
    key, version = hdr.api_key, hdr.api_version
    layout, value = read_request(hdr, frame, "for the audit trail", "audit_too_large")
    if key == OFFSET_COMMIT and action == CHANGE and not _standalone_commit(value):
        return None
    named = named_entities(key, True, version, value)
    _more_resources(key, layout, value, named)
    return AuditRecord(action, key, version, hdr.client_id, _unique(named))


def read_request(
    hdr: RequestHeader,
    frame: memoryview,
    purpose: str,
    reason: str,
    keep_tagged: bool = False,
    views: bool = False,
) -> tuple[Layout, Value]:
    """A whole request read by its layout within READ_LIMIT and ELEMENT_LIMIT (beyond
    them ProtocolError `reason`, `purpose` saying what kproxy reads it for); a body that
    does not parse raises MalformedMessage. `views`: as `LayoutReader`'s."""
    key, version = hdr.api_key, hdr.api_version
    if len(frame) > READ_LIMIT:
        raise ProtocolError(
            f"{api_name(key)} request of {len(frame)} bytes: more than the {READ_LIMIT} "
            f"bytes kproxy reads {purpose}",
            reason=reason,
        )
    try:
        read = read_message(
            key, True, version, frame, hdr.body_offset, ELEMENT_LIMIT, keep_tagged, views
        )
    except ProtocolError as exc:
        if exc.reason != "too_large":
            raise
        raise ProtocolError(
            f"{api_name(key)} request of more than {ELEMENT_LIMIT} array elements: more "
            f"than kproxy reads {purpose}",
            reason=reason,
        ) from exc
    if read is None:
        raise MalformedMessage(f"{api_name(key)} v{version}: no layout to read it by")
    return read


def refusal_record(hdr: RequestHeader, refused: list[str]) -> AuditRecord:
    """The record of what the listener's authorization rules refused of a request:
    `refused`, as "kind:name"."""
    record = AuditRecord(REFUSE, hdr.api_key, hdr.api_version, hdr.client_id, refused)
    record.by_rules = True
    return record


def audit_response(record: AuditRecord, frame: memoryview, header_version: int) -> AuditRecord:
    """`record` completed by its response's error codes."""
    _, body = parse_response_header(frame, header_version)
    if len(frame) > READ_LIMIT:
        record.outcome = "unread"
        return record
    try:
        read = read_message(record.api_key, False, record.version, frame, body, ELEMENT_LIMIT)
    except ProtocolError:  # the client reads it as it may; only its outcome is unknown
        read = None
    if read is None:
        record.outcome = "unread"
        return record
    layout, value = read
    found = errors_by_resource(layout, value, _resource_reader(record.api_key))
    codes = [code for _, code in found]
    # What the response names beyond the request: a topic deleted by id (KIP-516), the
    # ACLs a filter matched.
    named = _unique([resource for resource, _ in found if resource is not None])
    record.resources += [r for r in named if r not in record.resources]
    failed_all = any(code and resource is None for resource, code in found)
    failed = record.resources if failed_all else _unique([r for r, c in found if c and r])
    record.failed = list(failed)
    record.errors = sorted({code for code in codes if code})
    if not record.errors:
        record.outcome = "success"
    elif all(codes):
        record.outcome = "failure"
    else:
        record.outcome = "partial"
    return record


def _standalone_commit(value: Value) -> bool:
    """An OffsetCommit from outside the group's membership: an admin's offset reset
    (AdminClient.alterConsumerGroupOffsets, kafka-consumer-groups --reset-offsets)
    commits with generation -1 and no member id; a member's routine commit is not a
    change to audit."""
    generation = value.get("GenerationIdOrMemberEpoch", -1)
    return bool(generation == -1 and not value.get("MemberId"))


def _more_resources(key: int, layout: Layout, value: Value, out: list[Resource]) -> None:
    reader = _resource_reader(key)
    if reader is not None:
        _structs(layout, value, reader, out)


def _structs(layout: Layout, value: Value, reader: Any, out: list[Resource]) -> None:
    found = reader(value)
    if found is not None:
        out.append(found)
    for sub, element in substructs(layout, value):
        _structs(sub, element, reader, out)


def _resource_reader(key: int) -> Any:
    """What names a resource in a struct of this API besides the annotated fields."""
    if key in _ACL_APIS:
        return _acl_resource
    if key in _CONFIG_APIS:
        return _config_resource
    if key == 49:
        return _quota_entity
    if key == 51:
        return _scram_user
    return None


def _acl_resource(value: Value) -> Resource | None:
    code = value.get("ResourceType", value.get("ResourceTypeFilter"))
    if code is None:
        return None
    name = value.get("ResourceName", value.get("ResourceNameFilter"))
    return _ACL_TYPES.get(code, f"type {code}"), "*any*" if name is None else name


def _config_resource(value: Value) -> Resource | None:
    code = value.get("ResourceType")
    if code is None:
        return None
    return _CONFIG_TYPES.get(code, f"type {code}"), value.get("ResourceName") or ""


def _quota_entity(value: Value) -> Resource | None:
    parts = value.get("Entity")
    if not isinstance(parts, list):
        return None
    # A null EntityName is the entity type's default quota.
    named = (f"{p.get('EntityType')}={p.get('EntityName') or '*default*'}" for p in parts)
    return "quota", ",".join(named)


def _scram_user(value: Value) -> Resource | None:
    # A request's Deletions and Upsertions name the user `Name` (beside a Mechanism);
    # the response's Results name it `User`.
    name = value.get("User") if "User" in value else value.get("Name")
    if "User" not in value and "Mechanism" not in value:
        return None
    return ("user", name) if isinstance(name, str) else None


def _unique(resources: list[Resource]) -> list[str]:
    seen: dict[str, None] = {}
    for kind, name in resources:
        seen.setdefault(f"{kind}:{name}", None)
    return list(seen)
