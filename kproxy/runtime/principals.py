"""Who is calling, at the runtime's end (`kproxy.session.identity` holds it per
connection): the client certificate's subject mapped to a principal once a TLS
handshake is done, and each SASL exchange the session saw end logged, counted and
written as an `authentication` event."""

from __future__ import annotations

import logging

from kproxy.config.principals import PrincipalSettings, map_subject
from kproxy.runtime.observer import ProxyObserver
from kproxy.runtime.ratelog import RateLimitedLog
from kproxy.runtime.registry import Connection
from kproxy.session.identity import Authentication, Identity
from kproxy.session.state import SessionState

log = logging.getLogger("kproxy.connection")


class Principals:
    """The `principals` settings in force, and what reports an exchange's end."""

    def __init__(self, settings: PrincipalSettings, observer: ProxyObserver) -> None:
        self.observer = observer
        self.failures = RateLimitedLog(log)
        self.configure(settings)

    def configure(self, settings: PrincipalSettings) -> None:
        """At start and on a reload: connections that begin afterwards meet these."""
        self.rules = settings.mapping_rules()
        self.claim = settings.oauthbearer_claim

    def certificate(self, conn: Connection, session: SessionState, subject: str | None) -> bool:
        """A TLS handshake is done, with this client certificate subject (None: no
        certificate, the client stays anonymous). False, the connection closed, when no
        mapping rule names a principal for it, as a Kafka broker fails it."""
        if subject is None:
            return True
        name = map_subject(self.rules, subject)
        if name is None:
            self.failures.warning(
                "principal_unmapped",
                "closing client %s on %s: no principals.tls_mapping_rules rule matches "
                "its certificate subject %r",
                conn.peer,
                conn.listener,
                subject,
            )
            conn.close("principal_unmapped")
            return False
        identity = session.identity = Identity(session.oauthbearer_claim)
        identity.principal = f"User:{name}"
        return True

    def authenticated(self, conn: Connection, ended: list[Authentication]) -> None:
        """SASL exchanges of `conn` that ended: a log line each (failures rate-limited),
        a count and an event."""
        for auth in ended:
            self.observer.authenticated(conn.listener, conn.peer_ip, auth)
            again = "re-authenticated" if auth.reauthentication else "authenticated"
            if auth.succeeded:
                log.info(
                    "client %s on %s %s as %s (%s)",
                    conn.peer,
                    conn.listener,
                    again,
                    auth.principal,
                    auth.mechanism,
                )
            else:
                self.failures.warning(
                    "authentication_failed",
                    "client %s on %s failed to authenticate with %s as %s: error %d",
                    conn.peer,
                    conn.listener,
                    auth.mechanism or "?",
                    auth.principal or "no name kproxy could read",
                    auth.error_code,
                )
