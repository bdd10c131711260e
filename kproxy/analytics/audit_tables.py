"""The audit trail's tables (`audit` events, docs/security.md): changes by principal and
resource, refusals by principal, failed authentications by client address, and each
tenant's changes and refusals. The batch
job and `--follow` build them with these same functions."""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = ["AUDIT_TABLES", "audit_tables"]

AUDIT_TABLES: Final = (
    "changes_by_principal",
    "refusals_by_principal",
    "failed_authentications",
    "audit_by_tenant",
)


def _audit(events: DataFrame, action: str) -> DataFrame:
    return events.filter((F.col("type") == "audit") & (F.col("action") == action))


def changes_by_principal(events: DataFrame) -> DataFrame:
    """One row per principal, resource, API and outcome (a request naming no resource
    counts under an empty one): how many changes, and when the last was."""
    changes = _audit(events, "change").withColumn(
        "resource",
        F.explode_outer(F.when(F.size("resources") > 0, F.col("resources"))),
    )
    return (
        changes.groupBy("principal", F.coalesce("resource", F.lit("")).alias("resource"), "api")
        .agg(
            F.count(F.lit(1)).alias("changes"),
            F.count_if(F.col("outcome") != "success").alias("failed"),
            F.max("ts").alias("last"),
        )
        .orderBy(F.desc("changes"), "principal", "resource", "api")
    )


def refusals_by_principal(events: DataFrame) -> DataFrame:
    return (
        _audit(events, "refuse")
        .groupBy("principal", "listener", "api")
        .agg(F.count(F.lit(1)).alias("refusals"), F.max("ts").alias("last"))
        .orderBy(F.desc("refusals"), "principal", "listener", "api")
    )


def failed_authentications(events: DataFrame) -> DataFrame:
    failed = _audit(events, "authenticate").filter(F.col("outcome") == "failure")
    return (
        failed.groupBy("client_address", "mechanism")
        .agg(
            F.count(F.lit(1)).alias("failures"),
            F.count_distinct("principal").alias("names_claimed"),
            F.max("ts").alias("last"),
        )
        .orderBy(F.desc("failures"), "client_address", "mechanism")
    )


def audit_by_tenant(events: DataFrame) -> DataFrame:
    """One row per tenant (listeners.tenancy): its changes, those not a success, its
    refusals, and when the last record was."""
    records = events.filter((F.col("type") == "audit") & F.col("tenant").isNotNull())
    change = F.col("action") == "change"
    return (
        records.groupBy("tenant")
        .agg(
            F.count_if(change).alias("changes"),
            F.count_if(change & (F.col("outcome") != "success")).alias("failed"),
            F.count_if(F.col("action") == "refuse").alias("refusals"),
            F.max("ts").alias("last"),
        )
        .orderBy("tenant")
    )


def audit_tables(events: DataFrame) -> dict[str, DataFrame]:
    return {
        "changes_by_principal": changes_by_principal(events),
        "refusals_by_principal": refusals_by_principal(events),
        "failed_authentications": failed_authentications(events),
        "audit_by_tenant": audit_by_tenant(events),
    }
