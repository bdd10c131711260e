"""Which ACL operation a request performs on each kind of entity it names, as a Kafka
broker's authorizer asks (KafkaApis, KIP-11's operations): Produce writes its topics,
Fetch reads them, CreateTopics creates them, OffsetCommit reads its group and topics...

One documented table, by API key and entity kind; an API the table does not list is
authorized as ALTER on what it names, the strictest a rule can grant short of ALL.
"""

from __future__ import annotations

from typing import Final

from kproxy.protocol.entities import GROUP, TOPIC, TRANSACTIONAL_ID

READ: Final = "read"
WRITE: Final = "write"
CREATE: Final = "create"
DELETE: Final = "delete"
ALTER: Final = "alter"
DESCRIBE: Final = "describe"
ALTER_CONFIGS: Final = "alter_configs"
DESCRIBE_CONFIGS: Final = "describe_configs"
ALL: Final = "all"
OPERATION_NAMES: Final = frozenset(
    (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, ALTER_CONFIGS, DESCRIBE_CONFIGS, ALL)
)
# An allowed operation allows these too (Kafka's AclEntry.supportedOperations: READ,
# WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS).
IMPLIED: Final = {
    READ: frozenset((DESCRIBE,)),
    WRITE: frozenset((DESCRIBE,)),
    DELETE: frozenset((DESCRIBE,)),
    ALTER: frozenset((DESCRIBE,)),
    ALTER_CONFIGS: frozenset((DESCRIBE_CONFIGS,)),
}

# (api key, entity kind) -> operation.
_READ_GROUP_AND_TOPICS = {GROUP: READ, TOPIC: READ}
_BY_API: Final[dict[int, dict[str, str]]] = {
    0: {TOPIC: WRITE, TRANSACTIONAL_ID: WRITE},  # Produce
    1: {TOPIC: READ},  # Fetch
    2: {TOPIC: DESCRIBE},  # ListOffsets
    3: {TOPIC: DESCRIBE},  # Metadata
    8: _READ_GROUP_AND_TOPICS,  # OffsetCommit
    9: {GROUP: DESCRIBE, TOPIC: DESCRIBE},  # OffsetFetch
    10: {GROUP: DESCRIBE, TRANSACTIONAL_ID: DESCRIBE},  # FindCoordinator
    11: {GROUP: READ},  # JoinGroup
    12: {GROUP: READ},  # Heartbeat
    13: {GROUP: READ},  # LeaveGroup
    14: {GROUP: READ},  # SyncGroup
    15: {GROUP: DESCRIBE},  # DescribeGroups
    16: {GROUP: DESCRIBE},  # ListGroups (what it lists)
    19: {TOPIC: CREATE},  # CreateTopics
    20: {TOPIC: DELETE},  # DeleteTopics
    21: {TOPIC: DELETE},  # DeleteRecords
    22: {TRANSACTIONAL_ID: WRITE},  # InitProducerId
    23: {TOPIC: DESCRIBE},  # OffsetForLeaderEpoch
    24: {TOPIC: WRITE, TRANSACTIONAL_ID: WRITE},  # AddPartitionsToTxn
    25: {GROUP: READ, TRANSACTIONAL_ID: WRITE},  # AddOffsetsToTxn
    26: {TRANSACTIONAL_ID: WRITE},  # EndTxn
    28: {GROUP: READ, TOPIC: READ, TRANSACTIONAL_ID: WRITE},  # TxnOffsetCommit
    32: {TOPIC: DESCRIBE_CONFIGS, GROUP: DESCRIBE_CONFIGS},  # DescribeConfigs
    33: {TOPIC: ALTER_CONFIGS, GROUP: ALTER_CONFIGS},  # AlterConfigs
    37: {TOPIC: ALTER},  # CreatePartitions
    42: {GROUP: DELETE},  # DeleteGroups
    44: {TOPIC: ALTER_CONFIGS, GROUP: ALTER_CONFIGS},  # IncrementalAlterConfigs
    47: {GROUP: DELETE, TOPIC: READ},  # OffsetDelete
    61: {TOPIC: READ},  # DescribeProducers
    65: {TRANSACTIONAL_ID: DESCRIBE},  # DescribeTransactions
    66: {TRANSACTIONAL_ID: DESCRIBE},  # ListTransactions (what it lists)
    68: {GROUP: READ, TOPIC: DESCRIBE},  # ConsumerGroupHeartbeat
    69: {GROUP: DESCRIBE},  # ConsumerGroupDescribe
    75: {TOPIC: DESCRIBE},  # DescribeTopicPartitions
    76: {GROUP: READ, TOPIC: DESCRIBE},  # ShareGroupHeartbeat
    77: {GROUP: DESCRIBE},  # ShareGroupDescribe
    78: _READ_GROUP_AND_TOPICS,  # ShareFetch
    79: _READ_GROUP_AND_TOPICS,  # ShareAcknowledge
    88: {GROUP: READ, TOPIC: DESCRIBE},  # StreamsGroupHeartbeat
    89: {GROUP: DESCRIBE},  # StreamsGroupDescribe
    90: {GROUP: DESCRIBE, TOPIC: DESCRIBE},  # DescribeShareGroupOffsets
    91: _READ_GROUP_AND_TOPICS,  # AlterShareGroupOffsets
    92: {GROUP: DELETE, TOPIC: READ},  # DeleteShareGroupOffsets
}


def operation_of(api_key: int, kind: str) -> str:
    """The operation a request of this API performs on an entity of this kind."""
    return _BY_API.get(api_key, {}).get(kind, ALTER)


def granted(operations: frozenset[str] | None) -> frozenset[str] | None:
    """What an allow rule's operations allow, implications included (None: all)."""
    if operations is None or ALL in operations:
        return None
    more = set(operations)
    for operation in operations:
        more |= IMPLIED.get(operation, frozenset())
    return frozenset(more)
