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
import functools
import struct
import threading
from types import TracebackType
from typing import Any

from kio.schema.errors import ErrorCode

from tests.kio_support import (
    API_VERSIONS_KEY,
    decode_request_frame,
    encode_response_frame,
)
from tests.scripted_answers import (
    CLIENT_LISTENER,
    CONTROLLER_LISTENER,
    UNSUPPORTED_VERSION,
    Handler,
    ScriptedAnswers,
    ScriptedNode,
)

LOOPBACK = "127.0.0.1"
MAX_FRAME = 64 * 1024 * 1024


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


# --------------------------------------------------------------------------- broker


class ScriptedBroker(ScriptedAnswers):
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
