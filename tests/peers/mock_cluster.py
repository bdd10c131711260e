"""librdkafka's mock cluster for tests: the binding kproxy's demo uses (docs/peers.md §1)."""

from kproxy.demo.mockcluster import (
    ERR_TRANSPORT,
    MockCluster,
    MockClusterError,
    MockRequest,
    librdkafka_path,
)

__all__ = ["ERR_TRANSPORT", "MockCluster", "MockClusterError", "MockRequest", "librdkafka_path"]
