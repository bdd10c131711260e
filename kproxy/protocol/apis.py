"""The API key table: names, versions and header versions of all 95 Kafka APIs."""

from __future__ import annotations

from typing import Final, NamedTuple

from kproxy.protocol.generated.api_keys import API_KEYS
from kproxy.protocol.plan import PLANS


class ApiInfo(NamedTuple):
    key: int
    name: str
    versions: tuple[int, ...]
    first_flexible: int  # -1 = never flexible
    headers: dict[int, tuple[int, int]]  # version -> (request header, response header)
    listeners: tuple[str, ...]  # which of Kafka's listeners serve it (broker, controller...)

    @property
    def min_version(self) -> int:
        return self.versions[0]

    @property
    def max_version(self) -> int:
        return self.versions[-1]


APIS: Final[dict[int, ApiInfo]] = {k: ApiInfo(k, *v) for k, v in API_KEYS.items()}

PRODUCE: Final = 0
FETCH: Final = 1
METADATA: Final = 3
FIND_COORDINATOR: Final = 10
SASL_HANDSHAKE: Final = 17
API_VERSIONS: Final = 18
SASL_AUTHENTICATE: Final = 36

# Messages whose bodies kproxy walks (they carry broker endpoints or leadership): those
# the generator wrote a walk plan for (tools/generate_protocol.py, WALKED).
WALKED_RESPONSES: Final = frozenset(key for key, is_request, _ in PLANS if not is_request)
WALKED_REQUESTS: Final = frozenset(key for key, is_request, _ in PLANS if is_request)
# Responses whose endpoints are brokers' client listeners: where a node is dialled.
# The KRaft quorum messages (KIP-853: Vote, Begin/EndQuorumEpoch, DescribeQuorum,
# FetchSnapshot, UpdateRaftVoter) name controller listeners instead, so they are
# rewritten like any endpoint but never change where kproxy dials a node it knows.
CLIENT_LISTENER_RESPONSES: Final = frozenset((0, 1, 3, 10, 60, 78, 79))
# Responses whose endpoints are controller listeners wherever they are sent (a broker
# forwards DescribeQuorum and UpdateRaftVoter to the active controller): Vote,
# BeginQuorumEpoch, EndQuorumEpoch, DescribeQuorum, FetchSnapshot, UpdateRaftVoter.
QUORUM_RESPONSES: Final = frozenset((52, 53, 54, 55, 59, 82))


# The KRaft metadata log (KIP-595): the one partition the quorum replicates, named in
# Vote/BeginQuorumEpoch/EndQuorumEpoch and, by its fixed id (Uuid.METADATA_TOPIC_ID,
# Uuid(0, 1)), in the Fetch requests and responses between controllers (v13+, KIP-516).
METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = bytes(15) + b"\x01"


# APIs that no broker listener serves (Kafka's schemas list only the controller, or only
# ZooKeeper-era brokers, for them): what brokers and controllers send each other,
# never a client. A client listener refuses them (kproxy.session.admission).
CONTROLLER_PLANE_APIS: Final = frozenset(
    k for k, info in APIS.items() if "broker" not in info.listeners
)


def api_name(key: int) -> str:
    info = APIS.get(key)
    return info.name if info is not None else "Unknown"


def is_known(key: int, version: int) -> bool:
    info = APIS.get(key)
    return info is not None and version in info.headers


def header_versions(key: int, version: int) -> tuple[int, int] | None:
    """(request header version, response header version), or None if unknown."""
    info = APIS.get(key)
    if info is None:
        return None
    return info.headers.get(version)


def is_flexible(key: int, version: int) -> bool:
    info = APIS.get(key)
    return info is not None and 0 <= info.first_flexible <= version
