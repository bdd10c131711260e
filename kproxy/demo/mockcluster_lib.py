"""librdkafka's C functions that `kproxy.demo.mockcluster` calls, with their signatures."""

from __future__ import annotations

import ctypes
import glob
import socket
import threading
from ctypes import (
    POINTER,
    c_char_p,
    c_int,
    c_int16,
    c_int32,
    c_int64,
    c_size_t,
    c_void_p,
)
from pathlib import Path
from typing import Any, NamedTuple

from kproxy.protocol.frames import FrameReader
from kproxy.protocol.headers import parse_response_header
from kproxy.protocol.requests import metadata_v1_request
from kproxy.protocol.walker import walk

RD_KAFKA_CONSUMER = 1
#: librdkafka's RD_KAFKA_RESP_ERR__TRANSPORT: pushed as a request error, the mock broker
#: closes the client's connection when it sees the request.
ERR_TRANSPORT = -195
RD_KAFKA_CONF_OK = 0


class MockClusterError(RuntimeError):
    """A mock-cluster call returned a librdkafka error."""


class MockRequest(NamedTuple):
    """One request seen by the mock cluster while request tracking was on."""

    broker_id: int
    api_key: int
    #: None: librdkafka 2.16 does not export an accessor for the request's ApiVersion.
    api_version: int | None
    #: When the mock received it, in microseconds (librdkafka's monotonic clock).
    timestamp_us: int


def librdkafka_path() -> Path:
    """Path of the librdkafka shared library bundled in the confluent-kafka wheel."""
    import confluent_kafka

    site = Path(confluent_kafka.__file__).resolve().parent.parent
    matches = sorted(glob.glob(str(site / "confluent_kafka.libs" / "librdkafka-*.so.1")))
    if not matches:
        raise FileNotFoundError(
            f"no librdkafka-*.so.1 under {site / 'confluent_kafka.libs'}; is the "
            "confluent-kafka manylinux wheel installed?"
        )
    return Path(matches[0])


class _Lib:
    """The subset of librdkafka used here, with every signature declared."""

    def __init__(self, path: Path) -> None:
        lib = ctypes.CDLL(str(path))
        self.lib = lib
        mc = c_void_p  # rd_kafka_mock_cluster_t *
        err = c_int  # rd_kafka_resp_err_t

        def fn(name: str, restype: Any, *argtypes: Any) -> Any:
            f = getattr(lib, name)
            f.restype = restype
            f.argtypes = list(argtypes)
            return f

        self.conf_new = fn("rd_kafka_conf_new", c_void_p)
        self.conf_set = fn(
            "rd_kafka_conf_set", c_int, c_void_p, c_char_p, c_char_p, c_char_p, c_size_t
        )
        self.conf_destroy = fn("rd_kafka_conf_destroy", None, c_void_p)
        self.new = fn("rd_kafka_new", c_void_p, c_int, c_void_p, c_char_p, c_size_t)
        self.destroy = fn("rd_kafka_destroy", None, c_void_p)
        self.err2str = fn("rd_kafka_err2str", c_char_p, err)

        self.cluster_new = fn("rd_kafka_mock_cluster_new", mc, c_void_p, c_int)
        self.cluster_destroy = fn("rd_kafka_mock_cluster_destroy", None, mc)
        self.cluster_bootstraps = fn("rd_kafka_mock_cluster_bootstraps", c_char_p, mc)
        self.topic_create = fn("rd_kafka_mock_topic_create", err, mc, c_char_p, c_int, c_int)
        self.topic_set_error = fn("rd_kafka_mock_topic_set_error", None, mc, c_char_p, err)
        self.partition_set_leader = fn(
            "rd_kafka_mock_partition_set_leader", err, mc, c_char_p, c_int32, c_int32
        )
        self.partition_set_follower = fn(
            "rd_kafka_mock_partition_set_follower", err, mc, c_char_p, c_int32, c_int32
        )
        self.partition_push_leader_response = fn(
            "rd_kafka_mock_partition_push_leader_response",
            err,
            mc,
            c_char_p,
            c_int,
            c_int32,
            c_int32,
        )
        self.broker_set_down = fn("rd_kafka_mock_broker_set_down", err, mc, c_int32)
        self.broker_set_up = fn("rd_kafka_mock_broker_set_up", err, mc, c_int32)
        self.broker_set_host_port = fn(
            "rd_kafka_mock_broker_set_host_port", None, mc, c_int32, c_char_p, c_int
        )
        self.broker_set_rack = fn("rd_kafka_mock_broker_set_rack", err, mc, c_int32, c_char_p)
        self.broker_set_rtt = fn("rd_kafka_mock_broker_set_rtt", err, mc, c_int32, c_int)
        self.broker_decommission = fn("rd_kafka_mock_broker_decommission", err, mc, c_int32)
        self.broker_add = fn("rd_kafka_mock_broker_add", err, mc, c_int32)
        self.coordinator_set = fn(
            "rd_kafka_mock_coordinator_set", err, mc, c_char_p, c_char_p, c_int32
        )
        self.push_request_errors_array = fn(
            "rd_kafka_mock_push_request_errors_array",
            None,
            mc,
            c_int16,
            c_size_t,
            POINTER(c_int),
        )
        self.clear_request_errors = fn("rd_kafka_mock_clear_request_errors", None, mc, c_int16)
        self.set_apiversion = fn("rd_kafka_mock_set_apiversion", err, mc, c_int16, c_int16, c_int16)
        self.start_request_tracking = fn("rd_kafka_mock_start_request_tracking", None, mc)
        self.stop_request_tracking = fn("rd_kafka_mock_stop_request_tracking", None, mc)
        self.clear_requests = fn("rd_kafka_mock_clear_requests", None, mc)
        self.get_requests = fn(
            "rd_kafka_mock_get_requests", POINTER(c_void_p), mc, POINTER(c_size_t)
        )
        self.request_id = fn("rd_kafka_mock_request_id", c_int32, c_void_p)
        self.request_api_key = fn("rd_kafka_mock_request_api_key", c_int16, c_void_p)
        self.request_timestamp = fn("rd_kafka_mock_request_timestamp", c_int64, c_void_p)
        self.request_destroy_array = fn(
            "rd_kafka_mock_request_destroy_array", None, POINTER(c_void_p), c_size_t
        )
        self.request_api_version: Any = None
        if hasattr(lib, "rd_kafka_mock_request_api_version"):  # not in 2.16.0
            self.request_api_version = fn("rd_kafka_mock_request_api_version", c_int16, c_void_p)


_LIB: _Lib | None = None
_LIB_LOCK = threading.Lock()


def load_library() -> _Lib:
    """The library, loaded once per process."""
    global _LIB
    with _LIB_LOCK:
        if _LIB is None:
            _LIB = _Lib(librdkafka_path())
        return _LIB


def metadata_brokers(host: str, port: int, timeout: float = 5.0) -> dict[int, tuple[str, int]]:
    """Ask one broker for the cluster's brokers (Metadata v1): {node id: (host, port)}."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(metadata_v1_request(1, b"kproxy-mockcluster"))
        reader = FrameReader(1 << 24)
        while True:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("broker closed the connection before answering")
            frames = reader.feed(data)
            if frames:
                _, body = parse_response_header(frames[0], 0)
                return {
                    e.node_id: (e.host, e.port)
                    for e in walk(frames[0], body, 3, 1, False).endpoints
                    if e.node_id is not None
                }
