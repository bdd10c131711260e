"""kproxy configuration: YAML -> validated, frozen settings (pydantic models).

Every validation failure raises `ConfigError`, whose ``str()`` is
``"<yaml path>: <problem>"``, for example ``listeners.broker_port_base: must be <= 65535
(got 70000)``. Paths are dotted, list items are written ``[i]`` and mapping entries use
the key (quoted when it is not a plain identifier or an integer). The rules the
models' annotations cannot say themselves:

* a section whose value is ``null`` (``admin:`` with nothing under it) means "all
  defaults", and ``listeners.advertised_host: null`` means "same as bind_host";
* the YAML file must not repeat a key inside one mapping (`kproxy.config.yaml_loader`);
* ports must not collide across sections (`_check_ports`, the one place for it).

A secret (a password, a token, a private key's passphrase) is never required to stand
in the YAML itself: `Secret` fields take ``{env: NAME}`` or ``{file: PATH}`` as well as
the value, and keep it out of ``repr`` and error messages.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BeforeValidator,
    Field,
    Strict,
    ValidationError,
    model_validator,
)

from kproxy.config.authorization import AuthorizationSettings
from kproxy.config.cluster import ClusterSettings
from kproxy.config.errors import FILE_PATH, ConfigError, describe_validation_error
from kproxy.config.events import EventSettings, KafkaSinkSettings
from kproxy.config.limits import LimitSettings
from kproxy.config.policy import ApiPolicySettings
from kproxy.config.ports import NodePorts, check_ports
from kproxy.config.principals import PrincipalSettings
from kproxy.config.proxy_protocol import ProxyProtocolSettings
from kproxy.config.quorum import ControllerSettings, QuorumSettings
from kproxy.config.quotas import QuotaSettings
from kproxy.config.runtime import RuntimeSettings
from kproxy.config.sasl import ClusterSaslSettings
from kproxy.config.section import Section
from kproxy.config.switchover import (
    CLUSTER_NAME_PATTERN,
    ClusterName,
    SwitchoverSettings,
    active_cluster,
)
from kproxy.config.tenancy import TenancySettings
from kproxy.config.tls import ClusterTlsSettings, ListenerTlsSettings, SniSettings
from kproxy.config.types import (
    Bool,
    Host,
    NodeIdKey,
    NodePort,
    Port,
    PositiveSeconds,
    Seconds,
    Secret,
    fail,
    upper,
)
from kproxy.config.yaml_loader import read_yaml
from kproxy.protocol.hostport import (
    MAX_PORT,
    HostPort,
    format_host_port,
    is_wildcard,
    parse_host_port,
)
from kproxy.session.authorization import Authorizer
from kproxy.session.tenancy import Tenancy

__all__ = [
    "LOG_LEVELS",
    "AdminSettings",
    "ApiPolicySettings",
    "AuthorizationSettings",
    "ClusterSaslSettings",
    "ClusterSettings",
    "ClusterTlsSettings",
    "ConfigError",
    "ControllerSettings",
    "EventSettings",
    "HostPort",
    "KafkaSinkSettings",
    "LimitSettings",
    "ListenerSettings",
    "ListenerTlsSettings",
    "LogSettings",
    "MetricsSettings",
    "QuorumSettings",
    "RuntimeSettings",
    "Secret",
    "Settings",
    "ShutdownSettings",
    "SniSettings",
    "SwitchoverSettings",
    "format_host_port",
    "load_config",
    "parse_config",
    "parse_host_port",
]

LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_CLUSTER: Final = "default"  # the name of a configuration's one `cluster`


class ListenerSettings(Section):
    """Where kproxy listens and what it tells clients."""

    bind_host: Host = "127.0.0.1"
    advertised_host: Host = Field(
        "127.0.0.1", description="what clients are told (default: bind_host; never a wildcard)"
    )
    bootstrap_port: Port = 9092
    broker_port_base: Port = Field(
        9100, description="node N is served on broker_port_base + N (0: OS-chosen per node)"
    )
    node_port_overrides: dict[NodeIdKey, NodePort] = Field(
        default_factory=dict,
        description="node id -> port, before broker_port_base + id",
        json_schema_extra={"propertyNames": {"pattern": "^[0-9]+$"}},
    )
    # 500: the node ports (broker_port_base 9100 + id) stay below the admin port (9644).
    max_node_id: Annotated[int, Strict(), Field(ge=0)] = Field(
        500, description="ids above this without an override cannot be mapped"
    )
    role: Literal["client", "controller"] = Field(
        "client",
        description="client: refuse the controller plane (what brokers and controllers send "
        "each other); controller: serve it too, for a KRaft quorum dialled through kproxy",
    )
    tls: ListenerTlsSettings | None = Field(
        None, description="TLS on the bootstrap and node listeners (absent: plaintext)"
    )
    sni: SniSettings | None = Field(
        None,
        description="one TLS port (bootstrap_port) for every node, chosen by the server "
        "name clients send; no port per node (needs tls)",
    )
    name: Annotated[str, Strict(), Field(min_length=1, max_length=64)] = Field(
        "default", description="names this listener in API policy refusals and their log lines"
    )
    api_policy: ApiPolicySettings | None = Field(
        None,
        description="the Kafka APIs clients may call here; refused ones get the "
        "authorization error a broker sends (absent: all)",
    )
    authorization: AuthorizationSettings | None = Field(
        None,
        description="who may do what to which topics, groups and transactional ids, by "
        "principal, address and client id; refused entities get the errors a broker with "
        "the same ACLs sends (absent: everything)",
    )
    tenancy: TenancySettings | None = Field(
        None,
        description="teams sharing the cluster: each connection's tenant sees only its own "
        "topics, groups and transactional ids, under the names it uses (absent: none)",
    )
    proxy_protocol: ProxyProtocolSettings | None = Field(
        None,
        description="a PROXY protocol header (v1 or v2) before each client connection's "
        "first byte, from trusted load balancers: its address is the client's (absent: off)",
    )

    @model_validator(mode="before")
    @classmethod
    def _advertised_defaults_to_bind(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("advertised_host") is None:
            bind = data.get("bind_host", "127.0.0.1")
            if isinstance(bind, str) and is_wildcard(bind):
                raise fail(
                    "advertised_host", "required when listeners.bind_host is a wildcard address"
                )
            data = {**data, "advertised_host": bind}
        return data

    @model_validator(mode="after")
    def _check(self) -> ListenerSettings:
        if self.sni is not None and self.tls is None:
            raise fail("sni", "needs listeners.tls (the server name comes with the TLS handshake)")
        if is_wildcard(self.advertised_host):
            raise fail("advertised_host", "must not be a wildcard address (0.0.0.0 or ::)")
        most = MAX_PORT - self.broker_port_base
        if self.max_node_id > most:
            raise fail(
                "max_node_id",
                f"must be <= {most} so that broker_port_base + max_node_id <= {MAX_PORT}",
            )
        return self

    def denied_apis(self) -> frozenset[int]:
        """The API keys this listener refuses (`listeners.api_policy`)."""
        return frozenset() if self.api_policy is None else self.api_policy.denied_keys()

    def authorizer(self) -> Authorizer | None:
        """The listener's rules, compiled (`listeners.authorization`)."""
        return None if self.authorization is None else Authorizer.from_settings(self.authorization)

    def tenants(self) -> Tenancy | None:
        """The listener's tenants, compiled (`listeners.tenancy`)."""
        return None if self.tenancy is None else Tenancy.from_settings(self.tenancy)

    def advertises_denied(self) -> bool:
        """Whether ApiVersions keeps the refused APIs (`api_policy.advertise_denied`)."""
        return self.api_policy is not None and self.api_policy.advertise_denied

    def port_for_node(self, node_id: int) -> int | None:
        """The local port serving ``node_id`` (0: OS-chosen), or None if unmappable (and
        with SNI, where every node shares the bootstrap port)."""
        if self.sni is not None:
            return None
        override = self.node_port_overrides.get(node_id)
        if override is not None:
            return override
        if 0 <= node_id <= self.max_node_id:
            return self.broker_port_base + node_id if self.broker_port_base else 0
        return None


class AdminSettings(Section):
    enabled: Bool = True
    bind_host: Host = "127.0.0.1"
    port: Port = 9644
    topology: Bool | Literal["loopback"] = Field(
        True,
        description="serve /topology (it shows the brokers' real addresses); loopback: only "
        "to clients on this host (in Kubernetes, this pod: kubectl port-forward), while "
        "probes and scrapes reach the other endpoints from outside",
    )
    request_timeout_seconds: PositiveSeconds = Field(
        5.0, description="a request not whole by then, or an idle connection, is closed"
    )


class MetricsSettings(Section):
    topic_labels: Bool = Field(False, description="label per-topic metrics (cardinality!)")
    principal_labels: Annotated[int, Strict(), Field(ge=0, le=10_000)] = Field(
        0,
        description="label two metrics with the principal, at most this many principals "
        "(the first seen; later ones counted as other); 0: none",
    )


class ShutdownSettings(Section):
    grace_seconds: Seconds = 10.0


class LogSettings(Section):
    level: Annotated[Literal["DEBUG", "INFO", "WARNING", "ERROR"], BeforeValidator(upper)] = "INFO"


class Settings(Section):
    """All of kproxy's settings. Derive variants with ``model_copy(update=...)``."""

    cluster: ClusterSettings
    listeners: ListenerSettings = Field(default_factory=ListenerSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    admin: AdminSettings = Field(default_factory=AdminSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    events: EventSettings = Field(default_factory=EventSettings)
    shutdown: ShutdownSettings = Field(default_factory=ShutdownSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    quorum: QuorumSettings = Field(default_factory=QuorumSettings)
    quotas: QuotaSettings = Field(default_factory=QuotaSettings)
    principals: PrincipalSettings = Field(default_factory=PrincipalSettings)
    clusters: dict[ClusterName, ClusterSettings] = Field(
        default_factory=dict, description="upstream clusters by name (instead of cluster)",
        json_schema_extra={"propertyNames": {"pattern": CLUSTER_NAME_PATTERN}},
    )  # fmt: skip
    switchover: SwitchoverSettings = Field(default_factory=SwitchoverSettings)

    @model_validator(mode="before")
    @classmethod
    def _null_sections_mean_defaults(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            data = {k: v for k, v in data.items() if v is not None or k == "cluster"}
            data = active_cluster(data)
            if data.get("cluster") is None:
                data["cluster"] = {}
        return data

    @model_validator(mode="after")
    def _check_ports(self) -> Settings:
        """Cross-section port collisions (`kproxy.config.ports`); with several workers,
        no port the OS chooses: each worker would be given another."""
        lst = self.listeners
        if self.runtime.workers != 1:
            if lst.bootstrap_port == 0:
                raise fail("listeners.bootstrap_port", "must be set (not 0) with runtime.workers")
            if lst.broker_port_base == 0 and lst.sni is None:
                raise fail(
                    "listeners.broker_port_base",
                    "must be set (not 0) with runtime.workers, or nodes served by SNI",
                )
        check_ports(
            NodePorts(
                lst.bootstrap_port, lst.broker_port_base, lst.max_node_id, lst.node_port_overrides
            ),
            self.admin.port if self.admin.enabled else 0,
            {node_id: c.port for node_id, c in self.quorum.controllers.items()},
        )
        return self

    def upstreams(self) -> dict[str, ClusterSettings]:
        """Every upstream cluster by name: `clusters`, or the one `cluster` as "default"."""
        return dict(self.clusters) if self.clusters else {DEFAULT_CLUSTER: self.cluster}

    def active_name(self) -> str:
        """The name of the cluster this file serves (`switchover.active`)."""
        if not self.clusters:
            return DEFAULT_CLUSTER
        return self.switchover.active or next(iter(self.clusters))


def parse_config(data: Any) -> Settings:
    """Validate an already-loaded YAML document (the top-level mapping)."""
    if not isinstance(data, Mapping):
        raise ConfigError(FILE_PATH, "top level must be a mapping")
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise describe_validation_error(exc, Settings) from None


def load_config(path: str | os.PathLike[str]) -> Settings:
    """Read, parse and validate the YAML file at ``path``."""
    return parse_config(read_yaml(path))


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of kproxy's YAML configuration (`kproxy config-schema`)."""
    schema = Settings.model_json_schema()
    schema["title"] = "kproxy configuration"
    del schema["required"]  # cluster, or clusters (kproxy.config.switchover)
    schema["anyOf"] = [{"required": ["cluster"]}, {"required": ["clusters"]}]
    return schema
