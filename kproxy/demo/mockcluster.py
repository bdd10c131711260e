"""librdkafka's mock Kafka cluster, driven through ctypes.

The mock cluster runs on a background thread inside *this* process, in the librdkafka that
the confluent-kafka wheel bundles (``site-packages/confluent_kafka.libs/librdkafka-*.so.1``).
Its brokers listen on real OS-assigned ``127.0.0.1`` ports and speak the Kafka wire
protocol, so any client or proxy (in-process or not) can connect to them.

All ``rd_kafka_mock_*`` functions used here are thread-safe in librdkafka. Every C function
called has its ``argtypes``/``restype`` declared. librdkafka documents the mock API as
experimental (not covered by its ABI guarantees); the declarations match librdkafka 2.16.

Known limits of librdkafka 2.16.0 (confluent-kafka 2.16.1): requests are reported with
``api_version=None`` (no accessor is exported); CreateTopics is not served (use
:meth:`MockCluster.create_topic`); kafka-python 3.0.12 needs ``api_version=(3, 0)``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import threading
import weakref
from ctypes import (
    c_int,
    c_size_t,
)
from types import TracebackType
from typing import Self

from kproxy.demo.mockcluster_lib import (
    ERR_TRANSPORT,
    RD_KAFKA_CONF_OK,
    RD_KAFKA_CONSUMER,
    MockClusterError,
    MockRequest,
    librdkafka_path,
    load_library,
    metadata_brokers,
)

LOOPBACK = "127.0.0.1"


__all__ = [
    "ERR_TRANSPORT",
    "MockCluster",
    "MockClusterError",
    "MockRequest",
    "librdkafka_path",
    "metadata_brokers",
]

_LIVE: weakref.WeakSet[MockCluster] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for cluster in list(_LIVE):
        with contextlib.suppress(Exception):
            cluster.close()


class MockCluster:
    """A librdkafka mock cluster with brokers 1..N on OS-assigned loopback ports.

    Usage::

        with MockCluster(brokers=3) as mc:
            mc.create_topic("t", partitions=2, replication=3)
            producer = confluent_kafka.Producer({"bootstrap.servers": mc.bootstraps})
            ...
            mc.set_leader("t", 0, 3)

    ``debug`` is passed to librdkafka's ``debug`` property of the handle owning the cluster
    (e.g. ``"mock"``; logs go to stderr).
    """

    def __init__(self, brokers: int = 3, *, debug: str | None = None) -> None:
        if brokers < 1:
            raise ValueError("a mock cluster needs at least one broker")
        self._l = load_library()
        self._lock = threading.Lock()
        self._rk: int | None = None
        self._mc: int | None = None
        self._ports: dict[int, int] = {}
        self._down: set[int] = set()
        self._advertised: dict[int, tuple[str, int]] = {}
        self._tracked: list[MockRequest] | None = None

        errstr = ctypes.create_string_buffer(512)
        conf = self._l.conf_new()
        settings = {"log_level": "4"}  # warnings and worse
        if debug:
            settings["debug"] = debug
        for key, value in settings.items():
            if self._l.conf_set(conf, key.encode(), value.encode(), errstr, len(errstr)) != (
                RD_KAFKA_CONF_OK
            ):
                self._l.conf_destroy(conf)
                raise MockClusterError(f"rd_kafka_conf_set({key}): {errstr.value.decode()}")
        rk = self._l.new(RD_KAFKA_CONSUMER, conf, errstr, len(errstr))
        if not rk:
            self._l.conf_destroy(conf)  # rd_kafka_new only takes ownership on success
            raise MockClusterError(f"rd_kafka_new failed: {errstr.value.decode()}")
        self._rk = rk
        mc = self._l.cluster_new(rk, brokers)
        if not mc:
            self._l.destroy(rk)
            self._rk = None
            raise MockClusterError("rd_kafka_mock_cluster_new failed (see librdkafka log)")
        self._mc = mc
        _LIVE.add(self)
        self._bootstraps: str = self._l.cluster_bootstraps(mc).decode()
        for broker_id, addr in enumerate(self._bootstraps.split(","), start=1):
            host, _, port = addr.rpartition(":")
            self._ports[broker_id] = int(port)
            self._advertised[broker_id] = (host, int(port))

    # -- basics ------------------------------------------------------------------------

    @property
    def handle(self) -> int:
        """The ``rd_kafka_mock_cluster_t *`` (for calling other mock functions directly)."""
        if self._mc is None:
            raise MockClusterError("mock cluster is closed")
        return self._mc

    @property
    def lib(self) -> ctypes.CDLL:
        """The loaded librdkafka (same library confluent-kafka uses)."""
        return self._l.lib

    @property
    def bootstraps(self) -> str:
        """``127.0.0.1:p1,127.0.0.1:p2,...`` for the brokers created with the cluster.

        This is librdkafka's string and is not updated by :meth:`add_broker` or
        :meth:`decommission`; use :meth:`broker_ports` for the current brokers.
        """
        return self._bootstraps

    def broker_ports(self) -> dict[int, int]:
        """``{broker_id: real listening port}`` of the current brokers (all on 127.0.0.1)."""
        with self._lock:
            return dict(self._ports)

    def bootstrap_for(self, *broker_ids: int) -> str:
        """A bootstrap string (real sockets) for the given brokers, or all brokers."""
        ports = self.broker_ports()
        ids = broker_ids or tuple(sorted(ports))
        return ",".join(f"{LOOPBACK}:{ports[i]}" for i in ids)

    def _check(self, err: int, what: str) -> None:
        if err:
            msg = self._l.err2str(err)
            raise MockClusterError(f"{what}: {msg.decode() if msg else err} ({err})")

    # -- topics and leadership ---------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, replication: int = 1) -> None:
        self._check(
            self._l.topic_create(self.handle, name.encode(), partitions, replication),
            f"topic_create({name})",
        )

    def set_topic_error(self, name: str, err: int) -> None:
        """Error returned for the topic in Metadata (and AddPartitionsToTxn)."""
        self._l.topic_set_error(self.handle, name.encode(), err)

    def set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Move leadership (bumps the leader epoch); -1 makes the partition leaderless."""
        self._check(
            self._l.partition_set_leader(self.handle, topic.encode(), partition, broker_id),
            f"partition_set_leader({topic}, {partition}, {broker_id})",
        )

    def set_follower(self, topic: str, partition: int, broker_id: int) -> None:
        """Preferred replica to fetch from (KIP-392)."""
        self._check(
            self._l.partition_set_follower(self.handle, topic.encode(), partition, broker_id),
            f"partition_set_follower({topic}, {partition}, {broker_id})",
        )

    def push_leader_response(self, topic: str, partition: int, leader_id: int, epoch: int) -> None:
        """Queue the CurrentLeader (KIP-951) hint the next NOT_LEADER answer will carry."""
        self._check(
            self._l.partition_push_leader_response(
                self.handle, topic.encode(), partition, leader_id, epoch
            ),
            f"partition_push_leader_response({topic}, {partition}, {leader_id}, {epoch})",
        )

    # -- brokers -----------------------------------------------------------------------

    def set_down(self, broker_id: int) -> None:
        """Disconnect clients and refuse new connections (no leader change). -1 = all."""
        self._check(self._l.broker_set_down(self.handle, broker_id), f"set_down({broker_id})")
        with self._lock:
            self._down |= set(self._ports) if broker_id == -1 else {broker_id}

    def set_up(self, broker_id: int) -> None:
        """Accept connections again. -1 = all."""
        self._check(self._l.broker_set_up(self.handle, broker_id), f"set_up({broker_id})")
        with self._lock:
            self._down -= set(self._ports) if broker_id == -1 else {broker_id}

    def set_host_port(self, broker_id: int, host: str, port: int) -> None:
        """Change only the address advertised in Metadata; the socket stays where it is."""
        self._l.broker_set_host_port(self.handle, broker_id, host.encode(), port)
        with self._lock:
            self._advertised[broker_id] = (host, port)

    def set_rack(self, broker_id: int, rack: str) -> None:
        self._check(
            self._l.broker_set_rack(self.handle, broker_id, rack.encode()),
            f"set_rack({broker_id})",
        )

    def set_rtt(self, broker_id: int, ms: int) -> None:
        """Delay every response of the broker by ``ms`` milliseconds. -1 = all brokers."""
        self._check(self._l.broker_set_rtt(self.handle, broker_id, ms), f"set_rtt({broker_id})")

    def decommission(self, broker_id: int) -> None:
        """Remove the broker; its partitions are reassigned to the remaining brokers."""
        self._check(
            self._l.broker_decommission(self.handle, broker_id), f"decommission({broker_id})"
        )
        with self._lock:
            self._ports.pop(broker_id, None)
            self._advertised.pop(broker_id, None)
            self._down.discard(broker_id)

    def add_broker(self, broker_id: int, timeout: float = 5.0) -> int | None:
        """Add broker ``broker_id`` (partitions are reassigned over all brokers) and return
        the port it listens on.

        ``rd_kafka_mock_broker_add`` returns only an error code, and the cluster's
        bootstraps string is not updated. A new mock broker advertises its real listener
        (``127.0.0.1:<port>``) until :meth:`set_host_port` is called for it, so the port is
        read back from a Metadata v1 request sent to any other broker that is up. Returns
        None if no other broker could answer (e.g. all are down).
        """
        self._check(self._l.broker_add(self.handle, broker_id), f"broker_add({broker_id})")
        port: int | None = None
        with self._lock:
            candidates = [p for b, p in sorted(self._ports.items()) if b not in self._down]
        for candidate in candidates:
            try:
                found = metadata_brokers(LOOPBACK, candidate, timeout=timeout).get(broker_id)
            except OSError:
                continue
            if found is not None:
                port = found[1]
                break
        if port is not None:
            with self._lock:
                self._ports[broker_id] = port
                self._advertised[broker_id] = (LOOPBACK, port)
        return port

    def advertise_invalid_names(self, domain: str = "cluster.invalid") -> dict[str, str]:
        """Advertise every broker as ``broker-N.<domain>`` (keeping its real port) and return
        ``{"broker-N.<domain>:PORT": "127.0.0.1:PORT"}``, usable as kproxy's
        ``dial_overrides``. No client can resolve ``.invalid`` (RFC 2606), so any advertised
        address that reaches a client unrewritten makes it fail loudly."""
        overrides: dict[str, str] = {}
        for broker_id, port in sorted(self.broker_ports().items()):
            host = f"broker-{broker_id}.{domain}"
            self.set_host_port(broker_id, host, port)
            overrides[f"{host}:{port}"] = f"{LOOPBACK}:{port}"
        return overrides

    def advertised(self) -> dict[int, tuple[str, int]]:
        """``{broker_id: (host, port)}`` as last set through this object."""
        with self._lock:
            return dict(self._advertised)

    # -- coordinators, errors, versions --------------------------------------------------

    def coordinator_set(self, kind: str, key: str, broker_id: int) -> None:
        """``kind`` is ``"group"`` or ``"transaction"``."""
        if kind not in ("group", "transaction"):
            raise ValueError("kind must be 'group' or 'transaction'")
        self._check(
            self._l.coordinator_set(self.handle, kind.encode(), key.encode(), broker_id),
            f"coordinator_set({kind}, {key}, {broker_id})",
        )

    def push_request_errors(self, api_key: int, errors: list[int]) -> None:
        """The next ``len(errors)`` requests with ``api_key`` (to any broker) fail with these
        codes in order; :data:`ERR_TRANSPORT` (-195) makes the broker disconnect instead."""
        arr = (c_int * len(errors))(*errors)
        self._l.push_request_errors_array(self.handle, api_key, len(errors), arr)

    def clear_request_errors(self, api_key: int) -> None:
        self._l.clear_request_errors(self.handle, api_key)

    def set_apiversion(self, api_key: int, min_version: int, max_version: int) -> None:
        """Version range advertised (and accepted) for ``api_key``; -1, -1 disables it."""
        self._check(
            self._l.set_apiversion(self.handle, api_key, min_version, max_version),
            f"set_apiversion({api_key}, {min_version}, {max_version})",
        )

    # -- request tracking --------------------------------------------------------------

    def start_request_tracking(self) -> None:
        """Record every request the cluster receives (see :meth:`get_requests`)."""
        with self._lock:
            self._tracked = None
        self._l.start_request_tracking(self.handle)

    def stop_request_tracking(self) -> list[MockRequest]:
        """Stop tracking and return what was tracked.

        librdkafka 2.16's ``rd_kafka_mock_stop_request_tracking`` discards the tracked
        requests (observed, despite its header comment), so they are read first and kept:
        :meth:`get_requests` keeps returning them until tracking starts again."""
        tracked = self._fetch_requests()
        self._l.stop_request_tracking(self.handle)
        with self._lock:
            self._tracked = tracked
        return list(tracked)

    def clear_requests(self) -> None:
        with self._lock:
            self._tracked = None
        self._l.clear_requests(self.handle)

    def get_requests(self) -> list[MockRequest]:
        """Requests seen since tracking started, oldest first (after
        :meth:`stop_request_tracking`: those seen until it stopped)."""
        with self._lock:
            if self._tracked is not None:
                return list(self._tracked)
        return self._fetch_requests()

    def _fetch_requests(self) -> list[MockRequest]:
        cnt = c_size_t(0)
        arr = self._l.get_requests(self.handle, ctypes.byref(cnt))
        if not arr:
            return []
        out: list[MockRequest] = []
        try:
            for i in range(cnt.value):
                req = arr[i]
                version = (
                    int(self._l.request_api_version(req))
                    if self._l.request_api_version is not None
                    else None
                )
                out.append(
                    MockRequest(
                        broker_id=int(self._l.request_id(req)),
                        api_key=int(self._l.request_api_key(req)),
                        api_version=version,
                        timestamp_us=int(self._l.request_timestamp(req)),
                    )
                )
        finally:
            self._l.request_destroy_array(arr, cnt.value)
        return out

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._mc is None

    def close(self) -> None:
        """Destroy the mock cluster (closes its sockets) and the handle that owns it."""
        with self._lock:
            mc, rk = self._mc, self._rk
            self._mc = self._rk = None
        if mc:
            self._l.cluster_destroy(mc)
        if rk:
            self._l.destroy(rk)
        _LIVE.discard(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # Best effort only; close() / the context manager is the supported path.
        if getattr(self, "_mc", None):
            with contextlib.suppress(Exception):
                self.close()

    def __repr__(self) -> str:
        return f"MockCluster(brokers={self.broker_ports()!r}, closed={self.closed})"
