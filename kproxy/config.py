"""kproxy configuration: YAML -> typed, validated, frozen settings.

Only pyyaml and the standard library are used.  Every validation failure raises
:class:`ConfigError` whose ``str()`` is ``"<yaml path>: <problem>"``, for example
``listeners.broker_port_base: must be 1-65535``.  Paths are dotted, list items are
written ``[i]`` and mapping entries use the key (quoted with double quotes when it is
not a plain identifier or an integer), e.g.
``cluster.dial_overrides."broker-1.kafka:9092": must be host:port``.

Rules that the YAML shape alone cannot express:

* unknown keys are errors at every level;
* ``bool`` is never accepted where an integer or a number is expected, and integers
  are never accepted as booleans;
* a section whose value is ``null`` (``admin:`` with nothing under it) means "all
  defaults"; a ``null`` scalar value is a type error, except for
  ``listeners.advertised_host`` where it means "same as bind_host";
* the YAML file must not repeat a key inside one mapping.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import yaml

__all__ = [
    "LOG_LEVELS",
    "AdminSettings",
    "ClusterSettings",
    "ConfigError",
    "EventSettings",
    "HostPort",
    "LimitSettings",
    "ListenerSettings",
    "LogSettings",
    "MetricsSettings",
    "Settings",
    "ShutdownSettings",
    "format_host_port",
    "load_config",
    "normalize_host",
    "parse_config",
    "parse_host_port",
]

HostPort = tuple[str, int]
"""A ``(host, port)`` pair; IPv6 hosts are stored without brackets."""

FILE_PATH: Final = "<file>"
"""The error path used for problems with the file as a whole."""

LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR")

MAX_PORT: Final = 65535
MIN_FRAME_BYTES: Final = 1024
MAX_FRAME_BYTES: Final = 2**31 - 1


class ConfigError(ValueError):
    """A configuration problem at ``path``; ``str()`` gives ``"path: message"``."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, message)
        self.path = path
        self.message = message

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


# --------------------------------------------------------------------------------------
# host / port helpers
# --------------------------------------------------------------------------------------

_HOSTNAME_RE: Final = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?")
_HOST_PORT_MESSAGE: Final = "must be host:port"


def _is_valid_host(host: str) -> bool:
    """A hostname, an IPv4 address or a bare (unbracketed) IPv6 address."""
    if ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return False
        return True
    return len(host) <= 253 and _HOSTNAME_RE.fullmatch(host) is not None


def parse_host_port(s: str) -> HostPort:
    """Parse ``host:port`` (IPv6 as ``[::1]:9092``) into ``(host, port)``.

    The port must be 1-65535.  Raises :class:`ValueError` with the message
    ``must be host:port`` on any problem.
    """
    if not isinstance(s, str):
        raise ValueError(_HOST_PORT_MESSAGE)
    if s.startswith("["):
        end = s.find("]")
        if end < 0 or s[end + 1 : end + 2] != ":":
            raise ValueError(_HOST_PORT_MESSAGE)
        host, port_text = s[1:end], s[end + 2 :]
        if ":" not in host or not _is_valid_host(host):
            raise ValueError(_HOST_PORT_MESSAGE)
    else:
        host, sep, port_text = s.rpartition(":")
        # A bare IPv6 address ("::1:9092") is ambiguous: brackets are required.
        if not sep or ":" in host or not _is_valid_host(host):
            raise ValueError(_HOST_PORT_MESSAGE)
    if not (port_text.isascii() and port_text.isdigit()) or len(port_text) > 5:
        raise ValueError(_HOST_PORT_MESSAGE)
    port = int(port_text)
    if not 1 <= port <= MAX_PORT:
        raise ValueError(_HOST_PORT_MESSAGE)
    return host, port


def format_host_port(host: str, port: int) -> str:
    """The inverse of :func:`parse_host_port`: brackets IPv6 hosts."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def normalize_host(host: str) -> str:
    """Canonical form for comparing hosts: lower-case names, compressed IP addresses."""
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        return host.lower()


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


# --------------------------------------------------------------------------------------
# settings
# --------------------------------------------------------------------------------------


def _frozen_mapping(value: Mapping[Any, Any]) -> Mapping[Any, Any]:
    if isinstance(value, MappingProxyType):
        return value
    return MappingProxyType(dict(value))


def _empty_mapping() -> Mapping[Any, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """The upstream Kafka cluster."""

    bootstrap_servers: tuple[HostPort, ...]
    """Where to fetch the initial metadata from (non-empty)."""
    dial_overrides: Mapping[HostPort, HostPort] = field(default_factory=_empty_mapping, hash=False)
    """Advertised broker address -> address to dial instead.  Keys are normalized
    with :func:`normalize_host`; use :meth:`dial_address` to look up."""
    connect_timeout_seconds: float = 10.0
    dial_host_overrides: Mapping[str, str] = field(default_factory=_empty_mapping, hash=False)
    """Advertised broker host -> host to dial instead, keeping the port (keys from
    ``dial_overrides`` entries written without a port)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "bootstrap_servers", tuple(self.bootstrap_servers))
        object.__setattr__(
            self,
            "dial_host_overrides",
            _frozen_mapping({normalize_host(h): t for h, t in self.dial_host_overrides.items()}),
        )
        object.__setattr__(
            self,
            "dial_overrides",
            _frozen_mapping(
                {(normalize_host(h), p): target for (h, p), target in self.dial_overrides.items()}
            ),
        )

    def dial_address(self, host: str, port: int) -> HostPort:
        """The address to connect to for a broker advertised as ``host:port``."""
        name = normalize_host(host)
        exact = self.dial_overrides.get((name, port))
        if exact is not None:
            return exact
        return self.dial_host_overrides.get(name, host), port


@dataclass(frozen=True, slots=True)
class ListenerSettings:
    """Where kproxy listens and what it tells clients."""

    bind_host: str = "127.0.0.1"
    advertised_host: str = "127.0.0.1"
    """Host put into every rewritten broker address (never a wildcard address)."""
    bootstrap_port: int = 9092
    """0 means OS-chosen."""
    broker_port_base: int = 9100
    """Node N is served on ``broker_port_base + N``.  0 means an OS-chosen port for every
    node (demo and tests): :meth:`port_for_node` then returns 0 for mappable nodes."""
    node_port_overrides: Mapping[int, int] = field(default_factory=_empty_mapping, hash=False)
    """Node id -> port, taking precedence over ``broker_port_base + node_id``."""
    max_node_id: int = 1000
    """Node ids above this without an override cannot be mapped."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "node_port_overrides", _frozen_mapping(self.node_port_overrides))

    def port_for_node(self, node_id: int) -> int | None:
        """The local port serving ``node_id``, or ``None`` if it cannot be mapped.

        The override if there is one, else ``broker_port_base + node_id`` for
        ``0 <= node_id <= max_node_id``.  0 (only when ``broker_port_base`` is 0) means
        "let the OS choose".
        """
        override = self.node_port_overrides.get(node_id)
        if override is not None:
            return override
        if 0 <= node_id <= self.max_node_id:
            return self.broker_port_base + node_id if self.broker_port_base else 0
        return None


@dataclass(frozen=True, slots=True)
class LimitSettings:
    max_frame_bytes: int = 104857600
    """Largest accepted Kafka frame (size prefix value), 1 KiB .. 2 GiB-1."""
    write_buffer_high_bytes: int = 4194304
    """Transport high-water mark used for backpressure."""
    max_in_flight_requests: int = 1000
    """Per client connection."""
    allocator_retain_bytes: int = 33554432
    """Freed memory the C allocator keeps for reuse instead of returning it to the kernel
    (glibc only; 0 keeps glibc's defaults). See kproxy/proxy/allocator.py."""


@dataclass(frozen=True, slots=True)
class AdminSettings:
    enabled: bool = True
    bind_host: str = "127.0.0.1"
    port: int = 9644
    """0 means OS-chosen."""


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    topic_labels: bool = False
    """Label per-topic metrics with the topic name (watch the cardinality)."""


@dataclass(frozen=True, slots=True)
class EventSettings:
    enabled: bool = True
    dir: Path = Path("kproxy-events")
    """Relative paths are relative to the working directory of the process."""
    max_file_bytes: int = 67108864
    rotate_seconds: float = 3600.0
    queue_size: int = 10000
    request_sample_rate: float = 0.01
    """Fraction of requests recorded, 0..1."""


@dataclass(frozen=True, slots=True)
class ShutdownSettings:
    grace_seconds: float = 10.0


@dataclass(frozen=True, slots=True)
class LogSettings:
    level: str = "INFO"
    """One of :data:`LOG_LEVELS` (always upper case)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """All of kproxy's settings.  Use ``dataclasses.replace`` to derive variants."""

    cluster: ClusterSettings
    listeners: ListenerSettings = field(default_factory=ListenerSettings)
    limits: LimitSettings = field(default_factory=LimitSettings)
    admin: AdminSettings = field(default_factory=AdminSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    events: EventSettings = field(default_factory=EventSettings)
    shutdown: ShutdownSettings = field(default_factory=ShutdownSettings)
    log: LogSettings = field(default_factory=LogSettings)


# --------------------------------------------------------------------------------------
# parsing helpers
# --------------------------------------------------------------------------------------

_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MISSING: Final = object()


def _key_segment(key: object) -> str:
    if isinstance(key, int) and not isinstance(key, bool):
        return str(key)
    if isinstance(key, str) and _IDENTIFIER_RE.fullmatch(key):
        return key
    return json.dumps(key if isinstance(key, str) else str(key), ensure_ascii=False)


def _join(path: str, key: object) -> str:
    segment = _key_segment(key)
    return f"{path}.{segment}" if path else segment


def _check_keys(data: Mapping[Any, Any], path: str, allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    for key in data:
        if not isinstance(key, str) or key not in allowed:
            raise ConfigError(_join(path, key), f"unknown key (allowed: {', '.join(allowed)})")


def _section(root: Mapping[Any, Any], name: str, allowed: Iterable[str]) -> Mapping[Any, Any]:
    raw = root.get(name)
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(name, "must be a mapping")
    _check_keys(raw, name, allowed)
    return raw


def _int(
    data: Mapping[Any, Any],
    path: str,
    key: str,
    default: int,
    lo: int,
    hi: int | None = None,
) -> int:
    value = data.get(key, _MISSING)
    if value is _MISSING:
        return default
    where = _join(path, key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(where, "must be an integer")
    if hi is None:
        if value < lo:
            raise ConfigError(where, f"must be >= {lo}")
    elif not lo <= value <= hi:
        raise ConfigError(where, f"must be {lo}-{hi}")
    return value


def _number(
    data: Mapping[Any, Any],
    path: str,
    key: str,
    default: float,
    *,
    minimum: float,
    exclusive_minimum: bool = False,
    maximum: float | None = None,
) -> float:
    value = data.get(key, _MISSING)
    if value is _MISSING:
        return default
    where = _join(path, key)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ConfigError(where, "must be a number")
    number = float(value)
    if not math.isfinite(number):
        raise ConfigError(where, "must be a finite number")
    if maximum is not None:
        if not minimum <= number <= maximum:
            raise ConfigError(where, f"must be between {minimum:g} and {maximum:g}")
    elif exclusive_minimum and number <= minimum:
        raise ConfigError(where, f"must be > {minimum:g}")
    elif number < minimum:
        raise ConfigError(where, f"must be >= {minimum:g}")
    return number


def _bool(data: Mapping[Any, Any], path: str, key: str, default: bool) -> bool:
    value = data.get(key, _MISSING)
    if value is _MISSING:
        return default
    if not isinstance(value, bool):
        raise ConfigError(_join(path, key), "must be true or false")
    return value


def _str(data: Mapping[Any, Any], path: str, key: str, default: str) -> str:
    value = data.get(key, _MISSING)
    if value is _MISSING:
        return default
    where = _join(path, key)
    if not isinstance(value, str):
        raise ConfigError(where, "must be a string")
    if not value:
        raise ConfigError(where, "must not be empty")
    return value


def _host(data: Mapping[Any, Any], path: str, key: str, default: str) -> str:
    value = _str(data, path, key, default)
    if not _is_valid_host(value):
        raise ConfigError(_join(path, key), "must be a hostname or IP address")
    return value


def _host_port(value: object, where: str) -> HostPort:
    if not isinstance(value, str):
        raise ConfigError(where, _HOST_PORT_MESSAGE)
    try:
        return parse_host_port(value)
    except ValueError as exc:
        raise ConfigError(where, str(exc)) from None


# --------------------------------------------------------------------------------------
# sections
# --------------------------------------------------------------------------------------

_TOP_LEVEL: Final = (
    "cluster",
    "listeners",
    "limits",
    "admin",
    "metrics",
    "events",
    "shutdown",
    "log",
)


def _parse_cluster(root: Mapping[Any, Any]) -> ClusterSettings:
    path = "cluster"
    data = _section(root, path, ("bootstrap_servers", "dial_overrides", "connect_timeout_seconds"))

    where = _join(path, "bootstrap_servers")
    raw_servers = data.get("bootstrap_servers")
    if raw_servers is None or raw_servers == [] or raw_servers == "":
        raise ConfigError(where, "required")
    if not isinstance(raw_servers, list):
        raise ConfigError(where, "must be a list of host:port")
    servers = tuple(_host_port(item, f"{where}[{i}]") for i, item in enumerate(raw_servers))

    where = _join(path, "dial_overrides")
    raw_overrides = data.get("dial_overrides", _MISSING)
    overrides: dict[HostPort, HostPort] = {}
    host_overrides: dict[str, str] = {}
    if raw_overrides is not _MISSING and raw_overrides is not None:
        if not isinstance(raw_overrides, Mapping):
            raise ConfigError(where, "must be a mapping of host:port to host:port")
        originals: dict[object, str] = {}
        for key, value in raw_overrides.items():
            entry = _join(where, key)
            if not isinstance(key, str):
                raise ConfigError(entry, "key must be host:port or host")
            try:
                host, port = parse_host_port(key)
            except ValueError:
                host, port = key, -1
            if port < 0:
                # A bare host name maps a name to another host, keeping each broker's
                # port: the cluster's DNS names, resolved for kproxy alone.
                if not _is_valid_host(key) or ":" in key:
                    raise ConfigError(entry, "key must be host:port or host")
                name = normalize_host(key)
                if name in originals:
                    raise ConfigError(entry, f"same broker host as {originals[name]!r}")
                originals[name] = key
                if not isinstance(value, str) or not _is_valid_host(value) or ":" in value:
                    raise ConfigError(entry, "must be a host (the key has no port)")
                host_overrides[name] = value
                continue
            normalized = (normalize_host(host), port)
            if normalized in originals:
                raise ConfigError(entry, f"same broker address as {originals[normalized]!r}")
            originals[normalized] = key
            overrides[normalized] = _host_port(value, entry)

    timeout = _number(
        data, path, "connect_timeout_seconds", 10.0, minimum=0, exclusive_minimum=True
    )
    return ClusterSettings(
        bootstrap_servers=servers,
        dial_overrides=MappingProxyType(overrides),
        dial_host_overrides=MappingProxyType(host_overrides),
        connect_timeout_seconds=timeout,
    )


def _parse_listeners(root: Mapping[Any, Any]) -> ListenerSettings:
    path = "listeners"
    data = _section(
        root,
        path,
        (
            "bind_host",
            "advertised_host",
            "bootstrap_port",
            "broker_port_base",
            "node_port_overrides",
            "max_node_id",
        ),
    )
    defaults = ListenerSettings()
    bind_host = _host(data, path, "bind_host", defaults.bind_host)

    where = _join(path, "advertised_host")
    if data.get("advertised_host") is None:
        advertised_host = bind_host
        if _is_wildcard(advertised_host):
            raise ConfigError(where, "required when listeners.bind_host is a wildcard address")
    else:
        advertised_host = _host(data, path, "advertised_host", bind_host)
        if _is_wildcard(advertised_host):
            raise ConfigError(where, "must not be a wildcard address (0.0.0.0 or ::)")

    bootstrap_port = _int(data, path, "bootstrap_port", defaults.bootstrap_port, 0, MAX_PORT)
    base = _int(data, path, "broker_port_base", defaults.broker_port_base, 0, MAX_PORT)
    max_node_id = _int(data, path, "max_node_id", defaults.max_node_id, 0)
    if base + max_node_id > MAX_PORT:
        raise ConfigError(
            _join(path, "max_node_id"),
            f"must be <= {MAX_PORT - base} so that broker_port_base + max_node_id <= {MAX_PORT}",
        )

    where = _join(path, "node_port_overrides")
    raw_overrides = data.get("node_port_overrides", _MISSING)
    overrides: dict[int, int] = {}
    if raw_overrides is not _MISSING and raw_overrides is not None:
        if not isinstance(raw_overrides, Mapping):
            raise ConfigError(where, "must be a mapping of node id to port")
        for node_id, port in raw_overrides.items():
            entry = _join(where, node_id)
            if not isinstance(node_id, int) or isinstance(node_id, bool) or node_id < 0:
                raise ConfigError(entry, "node id must be an integer >= 0")
            if not isinstance(port, int) or isinstance(port, bool):
                raise ConfigError(entry, "must be an integer")
            if not 1 <= port <= MAX_PORT:
                raise ConfigError(entry, f"must be 1-{MAX_PORT}")
            overrides[node_id] = port

    return ListenerSettings(
        bind_host=bind_host,
        advertised_host=advertised_host,
        bootstrap_port=bootstrap_port,
        broker_port_base=base,
        node_port_overrides=MappingProxyType(overrides),
        max_node_id=max_node_id,
    )


def _parse_limits(root: Mapping[Any, Any]) -> LimitSettings:
    path = "limits"
    data = _section(
        root,
        path,
        (
            "max_frame_bytes",
            "write_buffer_high_bytes",
            "max_in_flight_requests",
            "allocator_retain_bytes",
        ),
    )
    d = LimitSettings()
    return LimitSettings(
        max_frame_bytes=_int(
            data, path, "max_frame_bytes", d.max_frame_bytes, MIN_FRAME_BYTES, MAX_FRAME_BYTES
        ),
        write_buffer_high_bytes=_int(
            data, path, "write_buffer_high_bytes", d.write_buffer_high_bytes, 1
        ),
        max_in_flight_requests=_int(
            data, path, "max_in_flight_requests", d.max_in_flight_requests, 1
        ),
        allocator_retain_bytes=_int(
            data, path, "allocator_retain_bytes", d.allocator_retain_bytes, 0, 1 << 30
        ),
    )


def _parse_admin(root: Mapping[Any, Any]) -> AdminSettings:
    path = "admin"
    data = _section(root, path, ("enabled", "bind_host", "port"))
    d = AdminSettings()
    return AdminSettings(
        enabled=_bool(data, path, "enabled", d.enabled),
        bind_host=_host(data, path, "bind_host", d.bind_host),
        port=_int(data, path, "port", d.port, 0, MAX_PORT),
    )


def _parse_metrics(root: Mapping[Any, Any]) -> MetricsSettings:
    path = "metrics"
    data = _section(root, path, ("topic_labels",))
    return MetricsSettings(topic_labels=_bool(data, path, "topic_labels", False))


def _parse_events(root: Mapping[Any, Any]) -> EventSettings:
    path = "events"
    data = _section(
        root,
        path,
        (
            "enabled",
            "dir",
            "max_file_bytes",
            "rotate_seconds",
            "queue_size",
            "request_sample_rate",
        ),
    )
    d = EventSettings()
    return EventSettings(
        enabled=_bool(data, path, "enabled", d.enabled),
        dir=Path(_str(data, path, "dir", str(d.dir))),
        max_file_bytes=_int(data, path, "max_file_bytes", d.max_file_bytes, 1),
        rotate_seconds=_number(
            data, path, "rotate_seconds", d.rotate_seconds, minimum=0, exclusive_minimum=True
        ),
        queue_size=_int(data, path, "queue_size", d.queue_size, 1),
        request_sample_rate=_number(
            data, path, "request_sample_rate", d.request_sample_rate, minimum=0, maximum=1
        ),
    )


def _parse_shutdown(root: Mapping[Any, Any]) -> ShutdownSettings:
    path = "shutdown"
    data = _section(root, path, ("grace_seconds",))
    return ShutdownSettings(grace_seconds=_number(data, path, "grace_seconds", 10.0, minimum=0))


def _parse_log(root: Mapping[Any, Any]) -> LogSettings:
    path = "log"
    data = _section(root, path, ("level",))
    level = _str(data, path, "level", "INFO").upper()
    if level not in LOG_LEVELS:
        raise ConfigError(_join(path, "level"), f"must be one of {', '.join(LOG_LEVELS)}")
    return LogSettings(level=level)


def _check_ports(listeners: ListenerSettings, admin: AdminSettings) -> None:
    """Cross-section port collisions (0 = OS-chosen never collides)."""
    bootstrap = listeners.bootstrap_port
    admin_port = admin.port if admin.enabled else 0
    base = listeners.broker_port_base
    overrides = listeners.node_port_overrides

    def live_derived_node(port: int) -> int | None:
        """The node whose ``broker_port_base + id`` port this is, if that port is in use."""
        if base == 0:  # OS-chosen ports never collide
            return None
        node_id = port - base
        if 0 <= node_id <= listeners.max_node_id and node_id not in overrides:
            return node_id
        return None

    if admin_port and admin_port == bootstrap:
        raise ConfigError("admin.port", "collides with listeners.bootstrap_port")
    if bootstrap:
        node_id = live_derived_node(bootstrap)
        if node_id is not None:
            raise ConfigError(
                "listeners.bootstrap_port",
                f"collides with the port of node {node_id} (broker_port_base + {node_id})",
            )

    used_by: dict[int, int] = {}
    for node_id, port in overrides.items():
        where = _join("listeners.node_port_overrides", node_id)
        if port == bootstrap:
            raise ConfigError(where, f"port {port} collides with listeners.bootstrap_port")
        if port == admin_port:
            raise ConfigError(where, f"port {port} collides with admin.port")
        if port in used_by:
            raise ConfigError(where, f"port {port} is also used by node {used_by[port]}")
        used_by[port] = node_id
        other = live_derived_node(port)
        if other is not None and other != node_id:
            raise ConfigError(
                where,
                f"port {port} collides with the port of node {other} (broker_port_base + {other})",
            )


def parse_config(data: Mapping[Any, Any]) -> Settings:
    """Validate an already-loaded YAML document (the top-level mapping)."""
    if not isinstance(data, Mapping):
        raise ConfigError(FILE_PATH, "top level must be a mapping")
    _check_keys(data, "", _TOP_LEVEL)
    cluster = _parse_cluster(data)
    listeners = _parse_listeners(data)
    limits = _parse_limits(data)
    admin = _parse_admin(data)
    metrics = _parse_metrics(data)
    events = _parse_events(data)
    shutdown = _parse_shutdown(data)
    log = _parse_log(data)
    _check_ports(listeners, admin)
    return Settings(
        cluster=cluster,
        listeners=listeners,
        limits=limits,
        admin=admin,
        metrics=metrics,
        events=events,
        shutdown=shutdown,
        log=log,
    )


# --------------------------------------------------------------------------------------
# YAML loading
# --------------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that rejects a key repeated within one mapping."""


def _construct_unique_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Hashable] = set()
    for key_node, _value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, Hashable):
            continue  # construct_mapping reports unhashable keys itself
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping
)


def _describe_yaml_error(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = exc.problem or exc.context or "syntax error"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
        return problem
    return " ".join(str(exc).split())


def load_config(path: str | os.PathLike[str]) -> Settings:
    """Read, parse and validate the YAML file at ``path``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(FILE_PATH, f"cannot read {os.fspath(path)}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(FILE_PATH, f"{os.fspath(path)} is not valid UTF-8") from None
    try:
        # _StrictLoader is a SafeLoader subclass: no arbitrary object construction.
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(
            FILE_PATH, f"invalid YAML in {os.fspath(path)}: {_describe_yaml_error(exc)}"
        ) from None
    if data is None:
        raise ConfigError(FILE_PATH, f"{os.fspath(path)} is empty; top level must be a mapping")
    if not isinstance(data, Mapping):
        raise ConfigError(FILE_PATH, f"top level must be a mapping, got {_yaml_type_name(data)}")
    return parse_config(data)


def _yaml_type_name(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__
