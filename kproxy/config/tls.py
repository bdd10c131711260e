"""The TLS settings: `listeners.tls` (towards clients) and `cluster.tls` (towards brokers).

Files are PEM. They are read when kproxy starts and when the certificates are reloaded
(`kproxy.runtime.tls`), not when the configuration is validated, so that `check-config` runs on
a machine without them; a file that cannot be loaded stops `kproxy run` with its path.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator

from kproxy.config.section import Section
from kproxy.config.types import Bool, Host, Seconds, Secret, fail, non_empty_path
from kproxy.protocol.hostport import is_valid_host

__all__ = ["ClientAuth", "ClusterTlsSettings", "ListenerTlsSettings", "SniSettings", "TlsVersion"]

TlsVersion = Literal["1.2", "1.3"]
ClientAuth = Literal["none", "optional", "required"]
PemPath = Annotated[str, BeforeValidator(non_empty_path)]


class ListenerTlsSettings(Section):
    """TLS on every client listener (bootstrap and nodes): kproxy terminates it. A client
    that has not finished its handshake within limits.first_request_timeout_seconds is
    closed."""

    certificate: PemPath = Field(description="PEM: kproxy's certificate, then its chain")
    key: PemPath = Field(description="PEM: the certificate's private key")
    key_password: Secret | None = Field(None, description="when the key is encrypted")
    client_ca: PemPath | None = Field(
        None, description="PEM: the CAs whose client certificates are accepted (mTLS)"
    )
    client_auth: ClientAuth | None = Field(
        None,
        description="required: no valid client certificate, no connection; optional: one is "
        "verified when sent; none (default without client_ca); required when client_ca is set",
    )
    min_version: TlsVersion = "1.2"
    reload_check_seconds: Seconds = Field(
        10.0,
        description="how often the certificate, key and CA files are checked for a change "
        "(0: only on SIGHUP); a change is loaded for new connections, established ones stay",
    )

    @model_validator(mode="after")
    def _client_auth_needs_ca(self) -> ListenerTlsSettings:
        if self.client_auth in ("optional", "required") and self.client_ca is None:
            raise fail("client_auth", f"{self.client_auth} needs client_ca")
        return self

    @property
    def effective_client_auth(self) -> ClientAuth:
        if self.client_auth is not None:
            return self.client_auth
        return "required" if self.client_ca is not None else "none"

    def files(self) -> tuple[str, ...]:
        """The files a reload reads (watched for changes)."""
        extra = (self.client_ca,) if self.client_ca is not None else ()
        return (self.certificate, self.key, *extra)


class ClusterTlsSettings(Section):
    """TLS to the brokers (`tls: {}` for the system's CAs and nothing else)."""

    ca: PemPath | None = Field(None, description="PEM: CAs to trust (default: the system's)")
    certificate: PemPath | None = Field(
        None, description="PEM: kproxy's client certificate, for brokers that require mTLS"
    )
    key: PemPath | None = None
    key_password: Secret | None = None
    verify_hostname: Bool = Field(
        True,
        description="check each broker's certificate against the name it advertises (also "
        "when dial_overrides send kproxy elsewhere); false is logged as a warning at start",
    )
    min_version: TlsVersion = "1.2"

    @model_validator(mode="after")
    def _certificate_and_key(self) -> ClusterTlsSettings:
        if (self.certificate is None) != (self.key is None):
            missing = "key" if self.key is None else "certificate"
            raise fail(missing, "certificate and key go together")
        if self.key_password is not None and self.key is None:
            raise fail("key_password", "needs key")
        return self


NODE_ID_FIELD = "{node_id}"


class SniSettings(Section):
    """One TLS port (listeners.bootstrap_port) for the bootstrap and every node: the
    server name a client sends in its TLS handshake (SNI) says which it wants. Any node
    id works, with no port range; clients resolve every name to kproxy (a wildcard DNS
    record)."""

    bootstrap_host: Host = Field(description="the name clients bootstrap with")
    node_host_pattern: Annotated[str, Field(min_length=1)] = Field(
        description="what clients are told node N is: a name with {node_id}, such as "
        "broker-{node_id}.kafka.example.com"
    )

    @model_validator(mode="after")
    def _pattern(self) -> SniSettings:
        pattern = self.node_host_pattern
        if pattern.count(NODE_ID_FIELD) != 1:
            raise fail("node_host_pattern", "must contain {node_id} once")
        if not is_valid_host(pattern.replace(NODE_ID_FIELD, "0")) or ":" in pattern:
            raise fail("node_host_pattern", "must be a host name once {node_id} is filled in")
        if self.node_host(0).lower() == self.bootstrap_host.lower():
            raise fail("node_host_pattern", "must not name the bootstrap host")
        return self

    def node_host(self, node_id: int) -> str:
        return self.node_host_pattern.replace(NODE_ID_FIELD, str(node_id))
