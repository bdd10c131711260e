"""What a `connection` event says of a client, and what an `audit` event and the audit
metrics say of a SASL exchange (`kproxy.session.identity.Authentication`), a change to
the cluster or a refusal (`kproxy.session.audit.AuditRecord`)."""

from __future__ import annotations

from typing import Any, Final

from kproxy.session.audit import AUTHENTICATE, AuditRecord
from kproxy.session.identity import Authentication

# The mechanisms a metric label names; any other (a client names what it likes in its
# SaslHandshake) is counted as "other", so that no client grows the label set.
MECHANISM_LABELS: Final = frozenset(
    ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
)
# An event's mechanism is the client's text, cut to this length.
MECHANISM_TEXT_LIMIT: Final = 64


def outcome(auth: Authentication) -> str:
    return "success" if auth.succeeded else "failure"


def connection_fields(
    action: str,
    listener: str,
    cause: str | None,
    principal: str | None,
    address: str | None,
    tenant: str | None = None,
) -> dict[str, Any]:
    """A `connection` event's own fields (docs/events.md)."""
    return {
        "action": action,
        "listener": listener,
        "cause": cause,
        "principal": principal,
        "client_address": address,
        "tenant": tenant,
    }


def authentication_labels(listener: str, auth: Authentication) -> tuple[str, str, str]:
    """`kproxy_authentications_total`'s labels: listener, mechanism, outcome."""
    mechanism = auth.mechanism if auth.mechanism in MECHANISM_LABELS else "other"
    return listener, mechanism, outcome(auth)


def authentication_fields(listener: str, address: str, auth: Authentication) -> dict[str, Any]:
    """The `audit` event of a SASL exchange (docs/events.md)."""
    failed = not auth.succeeded and auth.error_code
    return {
        "action": AUTHENTICATE,
        "listener": listener,
        "client_address": address,
        "client_id": auth.client_id,
        "principal": auth.principal,
        "api": "SaslAuthenticate",
        "api_version": None,
        "resources": [],
        "outcome": outcome(auth),
        "failed": [],
        "error_codes": [auth.error_code] if failed else [],
        "mechanism": auth.mechanism[:MECHANISM_TEXT_LIMIT],
        "reauthentication": auth.reauthentication,
        "tenant": None,  # a connection's tenant is found once it names something
    }


def audit_fields(
    listener: str, address: str, principal: str, record: AuditRecord, tenant: str | None = None
) -> dict[str, Any]:
    """The `audit` event of a change or a refusal (docs/events.md)."""
    return {
        "action": record.action,
        "listener": listener,
        "client_address": address,
        "client_id": record.client_id,
        "principal": principal,
        "api": record.api,
        "api_version": record.version,
        "resources": record.resources,
        "outcome": record.outcome,
        "failed": record.failed,
        "error_codes": record.errors,
        "mechanism": None,
        "reauthentication": None,
        "tenant": tenant,
    }
