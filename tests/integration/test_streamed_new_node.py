"""A streamed Fetch response whose KIP-951 tail names a node kproxy has no listener for.

kproxy forwards a large Fetch response as it arrives and holds back only its tail, where
`NodeEndpoints` is. When that tail names a node kproxy has never seen (a broker added
to the cluster, met first in a Fetch response), kproxy opens a listener for it before
the tail leaves. The records read in the same read as the tail are sent before the
listener is opened, by the same step: none of them may be lost on the way, or the
client's frame would come up short.

The broker is scripted (kio encodes every answer): no real peer can be made to name a
node in a Fetch response that its metadata does not list yet.
"""

from __future__ import annotations

import dataclasses
import socket
import struct
import uuid
from pathlib import Path

from tests.kio_support import decode_response_frame, encode_response_frame, fetch_v17_request
from tests.kproxy_process import KproxyProcess
from tests.peers.net import LOOPBACK
from tests.raw_kafka import read_frame
from tests.scripted_broker import ScriptedBroker
from tests.session.fetch_frames import fetch_response, without_padding

FETCH = 1
NEW_NODE = 7  # not in the scripted cluster's metadata
NEW_NODE_HOST = "broker-7.added.invalid"
# 2 MiB of records: far past the streaming threshold (64 KiB), many reads long.
RECORDS = [bytes(range(256)) * 4096, b"\x01" * (1 << 20)]


def test_records_before_a_new_nodes_tail_all_reach_the_client(tmp_path: Path) -> None:
    answer = fetch_response(17, RECORDS, NEW_NODE, ((NEW_NODE, NEW_NODE_HOST, 9092),))
    with ScriptedBroker((1,)) as broker:
        broker.handlers[FETCH] = lambda _version, _request: answer
        with (
            KproxyProcess(
                tmp_path, [broker.bootstrap], cluster={"dial_overrides": broker.dial_overrides}
            ) as kp,
            socket.create_connection((LOOPBACK, kp.bootstrap_port), timeout=30) as sock,
        ):
            sock.sendall(fetch_v17_request(5, uuid.UUID(int=7), "streamed-new-node"))
            body = read_frame(sock)
            frame = struct.pack(">i", len(body)) + body
            # The tail keeps its announced length, padded with a tagged field clients skip
            # (KIP-482) and kio refuses: it starts where a tail without endpoints starts.
            assert len(frame) == len(encode_response_frame(answer, 5))
            bare = encode_response_frame(dataclasses.replace(answer, node_endpoints=()), 5)
            tail = len(frame) - (len(bare) - 1)
            corr, got = decode_response_frame(type(answer), without_padding(frame, tail))
            assert corr == 5
            assert [p.records for p in got.responses[0].partitions[:2]] == RECORDS
            (endpoint,) = got.node_endpoints
            assert (endpoint.node_id, endpoint.host) == (NEW_NODE, LOOPBACK)
            # The port the client is told is a listener kproxy opened for the new node.
            socket.create_connection((LOOPBACK, endpoint.port), timeout=5).close()
            assert NEW_NODE_HOST.encode() not in frame
            assert kp.metric("kproxy_responses_streamed_total", api="Fetch", tail="padded") == 1
