"""The shape of an event line, for Spark: one flat schema, the union of every type's fields.

docs/events.md is the reference and `kproxy.observe.events.EVENT_FIELDS` the writer's field
lists; the types below are given per field name, and a test checks that every field the
writer knows has one. Every type's fields share one name space without clashes (a
`partition` is an int wherever it appears), so a single flat schema reads every line in
one parse, with no inference pass over the data.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import types as T

from kproxy.observe.events import COMMON_FIELDS, EVENT_FIELDS, EVENT_TYPES, SCHEMA_VERSION

__all__ = [
    "CORRUPT_COLUMN",
    "EVENT_TYPES",
    "FIELD_TYPES",
    "KNOWN_SCHEMA",
    "REQUIRED_FIELDS",
    "event_columns",
    "events_table_schema",
    "line_schema",
]

KNOWN_SCHEMA: Final = SCHEMA_VERSION

# Where from_json puts a line it could not parse (or a field of the wrong JSON type).
CORRUPT_COLUMN: Final = "_corrupt"

_TYPES: Final[dict[str, T.DataType]] = {
    "string": T.StringType(),
    "int": T.IntegerType(),
    "bigint": T.LongType(),
    "double": T.DoubleType(),
    "boolean": T.BooleanType(),
    "array<string>": T.ArrayType(T.StringType()),
    "array<int>": T.ArrayType(T.IntegerType()),
}

# Spark type of every field, by name (common fields first). `ts` is read as text and
# converted with try_to_timestamp, so a bad timestamp marks one line malformed instead
# of failing the job (Spark 4 runs with ANSI casts).
FIELD_TYPES: Final[dict[str, str]] = {
    "schema": "bigint",
    "type": "string",
    "ts": "string",
    "proxy": "string",
    "topic": "string",
    "topic_id": "string",
    "partition": "int",
    "old_leader": "int",
    "new_leader": "int",
    "old_epoch": "int",
    "new_epoch": "int",
    "source_api": "string",
    "api": "string",
    "client_id": "string",
    "error_code": "int",
    "from_node": "int",
    "to_node": "int",
    "with_endpoint": "boolean",
    "ms": "double",
    "node_id": "int",
    "upstream": "string",
    "advertised": "string",
    "action": "string",
    "listener": "string",
    "cause": "string",
    "version": "int",
    "total_ms": "double",
    "upstream_ms": "double",
    "principal": "string",
    "client_address": "string",
    "mechanism": "string",
    "outcome": "string",
    "reauthentication": "boolean",
    "tenant": "string",
    "api_version": "int",
    "resources": "array<string>",
    "failed": "array<string>",
    "error_codes": "array<int>",
    "phase": "string",
    "trigger": "string",
    "from_cluster": "string",
    "to_cluster": "string",
    "connections": "int",
    "fence_ms": "double",
    "drained": "int",
    "cut": "int",
    "unanswered": "int",
    "reason": "string",
    "detail": "string",
    "transactions_aborted": "int",
    "transactions_not_aborted": "int",
}

# Fields docs/events.md never writes as null. A line of a known type without one of
# them is malformed (schema 1 only ever adds fields, so they stay).
REQUIRED_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "leader_change": ("topic", "partition", "old_leader", "new_leader", "source_api"),
    "redirect": ("api", "partition", "error_code", "with_endpoint"),
    "recovery": ("partition", "ms", "with_endpoint"),
    "node_discovered": ("node_id", "upstream", "advertised"),
    "connection": ("action", "listener"),
    "request_sample": ("api", "version", "total_ms", "upstream_ms"),
    "audit": ("action", "listener", "principal", "api", "resources", "outcome"),
    "switchover": ("phase", "trigger", "from_cluster", "to_cluster"),
}


def event_columns() -> list[str]:
    """Every type's own fields, each once, in first-seen order of EVENT_FIELDS."""
    seen: dict[str, None] = {}
    for event_type in EVENT_TYPES:
        for name in EVENT_FIELDS[event_type]:
            seen.setdefault(name, None)
    return list(seen)


def _field(name: str) -> T.StructField:
    return T.StructField(name, _TYPES[FIELD_TYPES[name]], nullable=True)


def line_schema() -> T.StructType:
    """What from_json parses each line into: common fields, every type's fields, and
    the corrupt-record column."""
    fields = [_field(n) for n in (*COMMON_FIELDS, *event_columns())]
    fields.append(T.StructField(CORRUPT_COLUMN, T.StringType(), nullable=True))
    return T.StructType(fields)


def events_table_schema() -> T.StructType:
    """The Parquet `events` table: ts as a timestamp, the partition column `type` last.

    Given explicitly when reading the table back, so that an empty table (no events
    at all) reads as an empty DataFrame rather than failing schema inference.
    """
    fields = [
        T.StructField("ts", T.TimestampType(), nullable=True),
        _field("proxy"),
        *(_field(n) for n in event_columns()),
        _field("type"),
    ]
    return T.StructType(fields)
