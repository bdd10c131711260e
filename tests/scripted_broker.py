"""A scripted Kafka upstream ("fake broker") whose every answer is encoded by kio.

Used only for the messages that no real peer in the lab sends (KRaft quorum RPCs,
share-group RPCs, DescribeCluster from a controller...): a test puts kproxy in front of
it and checks what comes back through kproxy's real sockets.

* One asyncio event loop in a background thread serves two listening sockets per scripted
  node, its client listener and its CONTROLLER listener, each on ``127.0.0.1:<OS-chosen
  port>``; ``dial_overrides`` maps each advertised address (``controller-N.kraft.invalid``
  with the node's client or controller port) to the matching socket, so a test can see
  which of a node's listeners kproxy dialled.
* Every request frame is decoded with kio and answered from the handler table
  ``{api_key: fn(version, request) -> kio response}``; a test can queue one-shot answers
  with :meth:`ScriptedBroker.respond_once`. A handler returning ``None`` sends nothing.
* Everything received (and what was answered) is recorded for assertions; handler
  errors are recorded in :attr:`ScriptedBroker.errors` and close that connection.

This module never imports kproxy: it encodes and decodes with kio (through
``tests.kio_support``) only, so it is an independent oracle of the wire format.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import functools
import struct
import threading
import types
import typing
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import Any

from kio.schema.errors import ErrorCode

from tests.kio_support import (
    API_VERSIONS_KEY,
    decode_request_frame,
    encode_response_frame,
    kio_message_class,
    kio_versions,
)

__all__ = [
    "CLIENT_LISTENER",
    "CONTROLLER_LISTENER",
    "METADATA_TOPIC",
    "Handler",
    "Received",
    "ScriptedBroker",
    "ScriptedNode",
    "build",
]

LOOPBACK = "127.0.0.1"
METADATA_TOPIC = "__cluster_metadata"
CLIENT_LISTENER = "CLIENT"
CONTROLLER_LISTENER = "CONTROLLER"
SHARE_TOPIC = "kraft-share"
SHARE_TOPIC_ID = uuid.UUID("5ca1ab1e-0000-4000-8000-00000000cafe")
UNSUPPORTED_VERSION = 35
MAX_FRAME = 64 * 1024 * 1024

Handler = Callable[[int, Any], Any]
"""``fn(version, request) -> kio response`` (or None: no answer at all)."""


@dataclasses.dataclass(frozen=True)
class ScriptedNode:
    """One node of the scripted cluster, as the cluster advertises it."""

    node_id: int
    host: str  # advertised host (never resolvable: *.invalid)
    port: int  # the client listener's port (int32 fields: Metadata, DescribeCluster...)
    controller_port: int  # the CONTROLLER listener's port (uint16 fields: KRaft)
    rack: str | None

    @property
    def advertised(self) -> str:
        return f"{self.host}:{self.port}"


@dataclasses.dataclass(frozen=True)
class Received:
    """One request the scripted broker read, and what it answered."""

    node_id: int  # the scripted node whose socket received it
    listener: str  # CLIENT_LISTENER or CONTROLLER_LISTENER: which of its sockets
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    request: Any  # the kio request message
    response: Any | None  # the kio response sent back (None: none sent)


# --------------------------------------------------------------------------- building


def _strip_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def field_class(cls: type, name: str) -> type:
    """The kio dataclass of a struct field or of an array field's items."""
    tp = _strip_optional(_hints(cls)[name])
    if typing.get_origin(tp) is tuple:
        tp = _strip_optional(typing.get_args(tp)[0])
    if not dataclasses.is_dataclass(tp):
        raise TypeError(f"{cls.__qualname__}.{name} is not a struct or an array of structs")
    return tp  # type: ignore[return-value]


class Sub:
    """A nested value built from the field's own kio class (it differs per version)."""

    def __init__(self, make: Callable[[type], Any]) -> None:
        self.make = make


def build(cls: type, **values: Any) -> Any:
    """An instance of a kio class from a superset of its fields' values.

    Values for fields that this version does not have are ignored, so one call serves
    every version of a message; a :class:`Sub` value is called with the field's class.
    Fields with a default may be left out; a missing required field raises TypeError.
    """
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        value = values[f.name]
        if isinstance(value, Sub):
            value = value.make(field_class(cls, f.name))
        kwargs[f.name] = value
    return cls(**kwargs)


def _many(make_one: Callable[[type, Any], Any], items: Any) -> Sub:
    return Sub(lambda c: tuple(make_one(c, item) for item in items))


# --------------------------------------------------------------------------- broker


class ScriptedBroker:
    """A scripted multi-node Kafka upstream; see the module docstring."""

    def __init__(
        self,
        node_ids: tuple[int, ...] = (1, 2, 3),
        *,
        host_template: str = "controller-{node_id}.kraft.invalid",
        port: int = 9092,
        controller_port: int = 49093,
        cluster_id: str = "scripted-kraft-cluster",
        leader_id: int | None = None,
        leader_epoch: int = 17,
    ) -> None:
        if not node_ids:
            raise ValueError("a scripted cluster needs at least one node")
        self.nodes: dict[int, ScriptedNode] = {
            n: ScriptedNode(
                node_id=n,
                host=host_template.format(node_id=n),
                port=port,
                controller_port=controller_port,
                rack=f"rack-{n % 2}",
            )
            for n in node_ids
        }
        self.cluster_id = cluster_id
        self.leader_id = node_ids[0] if leader_id is None else leader_id
        self.leader_epoch = leader_epoch
        self.handlers: dict[int, Handler] = self.default_handlers()
        self.received: list[Received] = []
        self.errors: list[str] = []
        self.real_ports: dict[int, int] = {}  # node id -> real port of its client listener
        self.controller_real_ports: dict[int, int] = {}  # ... of its CONTROLLER listener
        self._once: list[tuple[int, int, str | None, Any]] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._tasks: set[asyncio.Task[None]] = set()

    # -- addresses -----------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """The real address of the first node (what kproxy bootstraps from)."""
        first = next(iter(self.nodes))
        return f"{LOOPBACK}:{self.real_ports[first]}"

    @property
    def dial_overrides(self) -> dict[str, str]:
        """Advertised ``host:port`` of every node's two listeners -> the real sockets."""
        out: dict[str, str] = {}
        for n, node in self.nodes.items():
            out[node.advertised] = f"{LOOPBACK}:{self.real_ports[n]}"
            out[f"{node.host}:{node.controller_port}"] = (
                f"{LOOPBACK}:{self.controller_real_ports[n]}"
            )
        return out

    # -- scripting -----------------------------------------------------------------------
    def respond_once(self, response: Any, client_id: str | None = None) -> None:
        """Answer the next request of ``response``'s api key and version (and, if given,
        from ``client_id``) with ``response``, instead of the handler's answer."""
        key = type(response).__api_key__
        version = type(response).__version__
        with self._lock:
            self._once.append((key, version, client_id, response))

    def requests(self, api_key: int | None = None, client_id: str | None = None) -> list[Received]:
        with self._lock:
            return [
                r
                for r in self.received
                if (api_key is None or r.api_key == api_key)
                and (client_id is None or r.client_id == client_id)
            ]

    def find(self, client_id: str | None, correlation_id: int) -> Received | None:
        with self._lock:
            for r in reversed(self.received):
                if r.client_id == client_id and r.correlation_id == correlation_id:
                    return r
        return None

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> ScriptedBroker:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="scripted-broker")
        self._thread.daemon = True
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._open(), loop).result(10)
        except BaseException:
            self.stop()
            raise
        return self

    async def _open(self) -> None:
        for n in self.nodes:
            for listener, ports in (
                (CLIENT_LISTENER, self.real_ports),
                (CONTROLLER_LISTENER, self.controller_real_ports),
            ):
                server = await asyncio.start_server(
                    functools.partial(self._serve, n, listener), LOOPBACK, 0
                )
                self._servers.append(server)
                ports[n] = server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None
        if loop.is_running():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._close(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> ScriptedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- serving -------------------------------------------------------------------------
    async def _serve(
        self,
        node_id: int,
        listener: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                if not 0 < size <= MAX_FRAME:
                    self._error(f"node {node_id}: bad frame size {size}")
                    return
                frame = head + await reader.readexactly(size)
                try:
                    answer = self._answer(node_id, listener, frame)
                except Exception as exc:  # a test bug or an unexpected request
                    self._error(f"node {node_id}: {type(exc).__name__}: {exc}")
                    return
                if answer is not None:
                    writer.write(answer)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _error(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)

    def _answer(self, node_id: int, listener: str, frame: bytes) -> bytes | None:
        api_key, version = struct.unpack_from(">hh", frame, 4)
        try:
            key, version, corr, client_id, request = decode_request_frame(frame)
        except ValueError:
            if api_key != API_VERSIONS_KEY:
                raise
            # KIP-511: an ApiVersions version we do not know gets a v0 error body.
            (corr,) = struct.unpack_from(">i", frame, 8)
            response = self.api_versions_response(0, ErrorCode(UNSUPPORTED_VERSION))
            self._record(Received(node_id, listener, api_key, version, corr, None, None, response))
            return encode_response_frame(response, corr)
        response = self._take_once(key, version, client_id)
        if response is None:
            handler = self.handlers.get(key)
            if handler is None:
                raise LookupError(f"no handler for api key {key} v{version}")
            response = handler(version, request)
        if response is not None:
            got = (type(response).__api_key__, type(response).__version__)
            if got != (key, version):
                raise TypeError(f"handler answered {got} to api key {key} v{version}")
        self._record(Received(node_id, listener, key, version, corr, client_id, request, response))
        return None if response is None else encode_response_frame(response, corr)

    def _take_once(self, key: int, version: int, client_id: str | None) -> Any:
        with self._lock:
            for i, (k, v, who, response) in enumerate(self._once):
                if k == key and v == version and (who is None or who == client_id):
                    del self._once[i]
                    return response
        return None

    def _record(self, received: Received) -> None:
        with self._lock:
            self.received.append(received)

    # -- default answers -----------------------------------------------------------------
    def default_handlers(self) -> dict[int, Handler]:
        return {
            API_VERSIONS_KEY: self.api_versions,
            3: self.metadata,
            10: self.find_coordinator,
            52: self.vote,
            53: self.quorum_epoch,
            54: self.quorum_epoch,
            55: self.describe_quorum,
            59: self.fetch_snapshot,
            60: self.describe_cluster,
            78: self.share_fetch,
            79: self.share_acknowledge,
            80: self.raft_voter_change,
            81: self.raft_voter_change,
            82: self.update_raft_voter,
        }

    @staticmethod
    def _response_class(api_key: int, version: int) -> type:
        cls = kio_message_class(api_key, version, "response")
        if cls is None:
            raise LookupError(f"kio has no response class for api key {api_key} v{version}")
        return cls

    def api_versions_response(self, version: int, error: ErrorCode = ErrorCode.none) -> Any:
        """Every key the scripted broker answers, with the versions kio has for it."""
        keys = sorted(self.handlers)
        ranges = [(k, kio_versions(k, "response")) for k in keys]
        return build(
            self._response_class(API_VERSIONS_KEY, version),
            error_code=error,
            api_keys=_many(
                lambda c, kr: build(c, api_key=kr[0], min_version=kr[1][0], max_version=kr[1][-1]),
                [(k, r) for k, r in ranges if len(r)],
            ),
            throttle_time=datetime.timedelta(0),
        )

    def api_versions(self, version: int, request: Any) -> Any:
        return self.api_versions_response(version)

    def _partition_leader(self, partition: int) -> ScriptedNode:
        ids = list(self.nodes)
        return self.nodes[ids[partition % len(ids)]]

    def metadata(self, version: int, request: Any) -> Any:
        ids = tuple(self.nodes)
        wanted = None if request.topics is None else [t.name for t in request.topics]

        def topic(c: type, name: str | None) -> Any:
            known = name in (None, SHARE_TOPIC)
            return build(
                c,
                error_code=ErrorCode.none if known else ErrorCode.unknown_topic_or_partition,
                name=SHARE_TOPIC if name is None else name,
                topic_id=SHARE_TOPIC_ID if known else None,
                is_internal=False,
                partitions=_many(partition, range(3) if known else ()),
                topic_authorized_operations=-(2**31),
            )

        def partition(c: type, index: int) -> Any:
            return build(
                c,
                error_code=ErrorCode.none,
                partition_index=index,
                leader_id=self._partition_leader(index).node_id,
                leader_epoch=self.leader_epoch,
                replica_nodes=ids,
                isr_nodes=ids,
                offline_replicas=(),
            )

        return build(
            self._response_class(3, version),
            throttle_time=datetime.timedelta(0),
            brokers=_many(
                lambda c, n: build(c, node_id=n.node_id, host=n.host, port=n.port, rack=n.rack),
                self.nodes.values(),
            ),
            cluster_id=self.cluster_id,
            controller_id=self.leader_id,
            topics=_many(topic, [None] if wanted is None else wanted),
            cluster_authorized_operations=-(2**31),
            error_code=ErrorCode.none,
        )

    def _coordinator(self, key: str) -> ScriptedNode:
        return self._partition_leader(sum(key.encode()))

    def find_coordinator(self, version: int, request: Any) -> Any:
        cls = self._response_class(10, version)
        if version < 4:
            node = self._coordinator(request.key)
            return build(
                cls,
                throttle_time=datetime.timedelta(0),
                error_code=ErrorCode.none,
                error_message=None,
                node_id=node.node_id,
                host=node.host,
                port=node.port,
            )

        def coordinator(c: type, key: str) -> Any:
            node = self._coordinator(key)
            return build(
                c,
                key=key,
                node_id=node.node_id,
                host=node.host,
                port=node.port,
                error_code=ErrorCode.none,
                error_message=None,
            )

        return build(
            cls,
            throttle_time=datetime.timedelta(0),
            coordinators=_many(coordinator, request.coordinator_keys),
        )

    def describe_cluster(self, version: int, request: Any) -> Any:
        return build(
            self._response_class(60, version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            error_message=None,
            endpoint_type=getattr(request, "endpoint_type", 1),
            cluster_id=self.cluster_id,
            controller_id=self.leader_id,
            brokers=_many(
                lambda c, n: build(
                    c, broker_id=n.node_id, host=n.host, port=n.port, rack=n.rack, is_fenced=False
                ),
                self.nodes.values(),
            ),
            cluster_authorized_operations=-(2**31),
        )

    # KRaft: every voter's CONTROLLER endpoint (uint16 ports).
    def _node_endpoints(self) -> Sub:
        return _many(
            lambda c, n: build(c, node_id=n.node_id, host=n.host, port=n.controller_port),
            self.nodes.values(),
        )

    def _quorum_topics(self, **partition_values: Any) -> Sub:
        def partition(c: type, index: int) -> Any:
            return build(
                c,
                partition_index=index,
                error_code=ErrorCode.none,
                leader_id=self.leader_id,
                leader_epoch=self.leader_epoch,
                **partition_values,
            )

        return _many(
            lambda c, name: build(c, topic_name=name, partitions=_many(partition, [0])),
            [METADATA_TOPIC],
        )

    def vote(self, version: int, request: Any) -> Any:
        return build(
            self._response_class(52, version),
            error_code=ErrorCode.none,
            topics=self._quorum_topics(vote_granted=False),
            node_endpoints=self._node_endpoints(),
        )

    def quorum_epoch(self, version: int, request: Any) -> Any:
        """BeginQuorumEpoch and EndQuorumEpoch answers have the same shape."""
        return build(
            self._response_class(type(request).__api_key__, version),
            error_code=ErrorCode.none,
            topics=self._quorum_topics(),
            node_endpoints=self._node_endpoints(),
        )

    def fetch_snapshot(self, version: int, request: Any) -> Any:
        def partition(c: type, index: int) -> Any:
            return build(
                c,
                index=index,
                error_code=ErrorCode.none,
                snapshot_id=Sub(lambda s: build(s, end_offset=4242, epoch=self.leader_epoch)),
                current_leader=Sub(
                    lambda s: build(s, leader_id=self.leader_id, leader_epoch=self.leader_epoch)
                ),
                size=17,
                position=0,
                unaligned_records=b"scripted-snapshot",
            )

        return build(
            self._response_class(59, version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            topics=_many(
                lambda c, name: build(c, name=name, partitions=_many(partition, [0])),
                [METADATA_TOPIC],
            ),
            node_endpoints=self._node_endpoints(),
        )

    def describe_quorum(self, version: int, request: Any) -> Any:
        def replica(c: type, node_id: int) -> Any:
            return build(
                c,
                replica_id=node_id,
                replica_directory_id=uuid.UUID(int=0xD1 << 64 | node_id),
                log_end_offset=1000 + node_id,
                last_fetch_timestamp=1_700_000_000_000 + node_id,
                last_caught_up_timestamp=1_700_000_000_000,
            )

        def partition(c: type, index: int) -> Any:
            return build(
                c,
                partition_index=index,
                error_code=ErrorCode.none,
                error_message=None,
                leader_id=self.leader_id,
                leader_epoch=self.leader_epoch,
                high_watermark=999,
                current_voters=_many(replica, list(self.nodes)),
                observers=_many(replica, [max(self.nodes) + 100]),
            )

        def node(c: type, n: ScriptedNode) -> Any:
            return build(
                c,
                node_id=n.node_id,
                listeners=_many(
                    lambda lc, lst: build(lc, name=lst[0], host=n.host, port=lst[1]),
                    [
                        (CONTROLLER_LISTENER, n.controller_port),
                        ("CONTROLLER_SSL", n.controller_port + 1),
                    ],
                ),
            )

        return build(
            self._response_class(55, version),
            error_code=ErrorCode.none,
            error_message=None,
            topics=_many(
                lambda c, name: build(c, topic_name=name, partitions=_many(partition, [0])),
                [METADATA_TOPIC],
            ),
            nodes=_many(node, self.nodes.values()),
        )

    def update_raft_voter(self, version: int, request: Any) -> Any:
        leader = self.nodes[self.leader_id]
        return build(
            self._response_class(82, version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            current_leader=Sub(
                lambda c: build(
                    c,
                    leader_id=leader.node_id,
                    leader_epoch=self.leader_epoch,
                    host=leader.host,
                    port=leader.controller_port,
                )
            ),
        )

    def raft_voter_change(self, version: int, request: Any) -> Any:
        """AddRaftVoter / RemoveRaftVoter: error fields only."""
        return build(
            self._response_class(type(request).__api_key__, version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            error_message=None,
        )

    def _share_topics(self, request: Any) -> Sub:
        """Every requested share partition answers NOT_LEADER_OR_FOLLOWER with a hint."""
        wanted = [(t.topic_id, [p.partition_index for p in t.partitions]) for t in request.topics]
        if not wanted:
            wanted = [(SHARE_TOPIC_ID, [0])]

        def partition(c: type, index: int) -> Any:
            leader = self._partition_leader(index + 1)
            return build(
                c,
                partition_index=index,
                error_code=ErrorCode.not_leader_or_follower,
                error_message="moved",
                acknowledge_error_code=0,
                acknowledge_error_message=None,
                current_leader=Sub(
                    lambda s: build(s, leader_id=leader.node_id, leader_epoch=self.leader_epoch)
                ),
                records=b"",
                acquired_records=(),
            )

        return _many(
            lambda c, tp: build(c, topic_id=tp[0], partitions=_many(partition, tp[1])), wanted
        )

    def _share_endpoints(self) -> Sub:
        return _many(
            lambda c, n: build(c, node_id=n.node_id, host=n.host, port=n.port, rack=n.rack),
            self.nodes.values(),
        )

    def _share_response(self, api_key: int, version: int, request: Any) -> Any:
        """ShareFetch and ShareAcknowledge answers have the same shape (KIP-932)."""
        return build(
            self._response_class(api_key, version),
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            error_message=None,
            acquisition_lock_timeout=datetime.timedelta(seconds=30),
            responses=self._share_topics(request),
            node_endpoints=self._share_endpoints(),
        )

    def share_fetch(self, version: int, request: Any) -> Any:
        return self._share_response(78, version, request)

    def share_acknowledge(self, version: int, request: Any) -> Any:
        return self._share_response(79, version, request)
