"""A real kproxy process in front of a scripted cluster (tests/scripted_broker.py, every
answer encoded by kio), a raw client on kproxy's real sockets, and the oracle: what a
client must decode from a response through kproxy (:func:`proxied_view`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import re
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.integration.kraft_share.cases import CLIENT_ID, MAX_NODE_ID, METADATA, sample_request
from tests.kio_expected import (
    ExpectedEndpoint,
    apply_mapping,
    expected_endpoints,
)
from tests.kio_support import (
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    kio_message_class,
)
from tests.kproxy_process import KproxyProcess
from tests.peers.net import LOOPBACK, wait_until
from tests.scripted_broker import ScriptedBroker

NODE_AT = re.compile(r"node (-?\d+) is at (\S+) \(dialled as")


_CORRELATION = itertools.count(1000)


class Exchange(NamedTuple):
    correlation_id: int
    raw: bytes  # the whole response frame the client read (size prefix included)
    response: Any  # decoded with kio


class RawClient:
    """A plain-socket Kafka client that encodes and decodes with kio only."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((LOOPBACK, port), timeout=timeout)

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def _read_exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("kproxy closed the connection instead of answering")
            buf += chunk
        return bytes(buf)

    def call(self, request: Any) -> Exchange:
        corr = next(_CORRELATION)
        self.sock.sendall(encode_request_frame(request, corr, CLIENT_ID))
        head = self._read_exactly(4)
        raw = head + self._read_exactly(struct.unpack(">i", head)[0])
        cls = kio_message_class(type(request).__api_key__, type(request).__version__, "response")
        assert cls is not None
        got, response = decode_response_frame(cls, raw)
        assert got == corr, f"correlation id {got}, expected {corr}"
        return Exchange(corr, raw, response)


def advertised_from_log(kp: KproxyProcess) -> dict[int, tuple[str, int]]:
    """The address kproxy last logged for each node (``node N is at H:P``)."""
    out: dict[int, tuple[str, int]] = {}
    for node, address in NODE_AT.findall(kp.log()):
        host, _, port = address.rpartition(":")
        out[int(node)] = (host, int(port))
    return out


def mappable(node_id: int | None) -> bool:
    return node_id is not None and 0 <= node_id <= MAX_NODE_ID


@dataclasses.dataclass
class Env:
    broker: ScriptedBroker
    kp: KproxyProcess

    def ports_for(self, msg: Any) -> dict[str, int]:
        """kproxy's listener ports, once every mappable node of ``msg`` has one."""
        wanted = {f"node-{e.node_id}" for e in expected_endpoints(msg) if mappable(e.node_id)}

        def logged() -> dict[str, int] | None:
            ports = self.kp.listener_ports()
            return ports if wanted <= ports.keys() else None

        return wait_until(logged, 10, what=f"kproxy to log listeners for {sorted(wanted)}")

    def call(self, client: RawClient, request: Any) -> Exchange:
        try:
            return client.call(request)
        except (ConnectionError, TimeoutError) as exc:
            pytest.fail(f"{exc}; kproxy log tail:\n{self.kp.log()[-4000:]}")

    def sent(self, exchange: Exchange) -> Any:
        """The kio response the scripted broker sent for this exchange."""
        received = self.broker.find(CLIENT_ID, exchange.correlation_id)
        assert received is not None, "the scripted broker never got this request"
        assert received.response is not None
        return received.response

    def assert_healthy(self) -> None:
        """kproxy is up: a new connection still gets Metadata with only kproxy addresses."""
        assert self.kp.proc is not None and self.kp.proc.poll() is None, self.kp.log()[-4000:]
        with RawClient(self.kp.bootstrap_port) as client:
            ex = self.call(client, sample_request(METADATA, 1))
        check_proxied(self, self.sent(ex), ex)
        assert not self.broker.errors, self.broker.errors


@contextlib.contextmanager
def proxied_cluster(tmp: Path) -> Iterator[Env]:
    with ScriptedBroker(node_ids=(1, 2, 3)) as broker:
        kp = KproxyProcess(
            tmp,
            [broker.bootstrap],
            cluster={"dial_overrides": broker.dial_overrides},
            # The KRaft requests that draw these answers are the controller plane.
            listeners={"max_node_id": MAX_NODE_ID, "role": "controller"},
        )
        with kp:
            # kproxy's own Metadata v1 (client id "kproxy") names nodes 1-3.
            wait_until(
                lambda: {"node-1", "node-2", "node-3"} <= kp.listener_ports().keys(),
                30,
                what="kproxy to open a listener for every scripted node",
            )
            assert broker.requests(METADATA, client_id="kproxy")
            yield Env(broker, kp)


def proxied_view(msg: Any, ports: dict[str, int]) -> Any:
    """What a client must get through kproxy for the upstream response ``msg``."""

    def new(ep: ExpectedEndpoint) -> tuple[str, int] | None:
        if mappable(ep.node_id):
            return LOOPBACK, ports[f"node-{ep.node_id}"]
        if ep.node_id is not None and ep.node_id < 0 and ep.host == "":
            return ep.host, ep.port  # no node, no address: an error answer, untouched
        return None  # removed from its array, or emptied where it stands alone

    return apply_mapping(msg, new)


def check_proxied(env: Env, original: Any, exchange: Exchange) -> None:
    """The client's view of ``original`` through kproxy is exactly right."""
    received = exchange.response
    ports = env.ports_for(original)
    kproxy_ports = set(ports.values())
    got = expected_endpoints(received)
    for ep in got:
        if ep.host == "" and not mappable(ep.node_id):
            continue  # FindCoordinator / UpdateRaftVoter: unmappable, emptied in place
        assert (ep.host, ep.port) == (LOOPBACK, ports[f"node-{ep.node_id}"]), ep
        assert ep.port in kproxy_ports
    want = proxied_view(original, ports)
    assert [e.node_id for e in got] == [e.node_id for e in expected_endpoints(want)]
    assert received == want
    # No upstream address (all are *.invalid) survives anywhere in the frame, not even in
    # bytes kio would not decode. Non-address strings may contain ".invalid" too
    # (hypothesis draws constants from loaded modules), so count against what kio writes
    # for the expected view rather than asking for none. Not byte equality: kproxy may
    # leave an emptied tagged NodeEndpoints in place where kio would omit it.
    expected_frame = encode_response_frame(want, exchange.correlation_id)
    assert exchange.raw.count(b".invalid") == expected_frame.count(b".invalid")
