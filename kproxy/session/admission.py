"""Which requests a client connection may send, and what it is told when it may not.

Refusals follow what a Kafka broker does with the same request, so that clients react
as they would to a broker:

* an ApiVersions version kproxy does not know is answered, as brokers answer one they
  do not know (KIP-511): UNSUPPORTED_VERSION in a v0 body naming the versions kproxy
  serves, and the client retries lower;
* any other unknown API key or version, and an API the listener does not serve, close
  the connection with a log line, as a broker closes a connection that sends a request
  it has not enabled on that listener;
* the controller plane (Kafka's schemas list only the controller, or only ZooKeeper-era
  brokers, as the listeners of BrokerRegistration, BrokerHeartbeat, Vote,
  Begin/EndQuorumEpoch, FetchSnapshot, UpdateRaftVoter, Envelope, LeaderAndIsr...) is
  what brokers and controllers send each other, never a client: client listeners refuse
  it. AddRaftVoter and RemoveRaftVoter are served by brokers (admin clients send them),
  so they pass, their endpoints walked under the walker's caps;
* an API the listener's policy refuses (`kproxy.session.policy`) is answered with the
  authorization error a broker sends (`refuse`);
* a request that changes the cluster (`kproxy.session.audit.CHANGE_APIS`) takes the
  general path, read for what it names and recorded with its outcome (the audit trail);
* a transactional producer's InitProducerId, AddOffsetsToTxn and EndTxn take the
  general path, read for the transactional id they name
  (`kproxy.session.transactions`: a switchover aborts its open transaction);
* for a while after a switchover, a Produce v13+ takes the general path, where the old
  cluster's topic ids it names are named as the target's (`kproxy.session.topic_ids`);
* SaslHandshake v0 is refused: raw SASL tokens follow it with no Kafka header, which
  kproxy cannot frame-check; every client since Kafka 1.0 uses v1 + SaslAuthenticate
  (KIP-152). SaslHandshake v1 and SaslAuthenticate pass, read on their way by the
  general path for the principal they name (`kproxy.session.identity`).

These rules are written once, in `route_of`, as a route for each (API key, version):
the general path and the fast lane (`kproxy.session.fast_lane`) both read the one
table a listener's `Admission` builds from it, so a rule added there holds on both.
"""

from __future__ import annotations

import struct

from kproxy.protocol.api_versions import SUPPORTED, UNSUPPORTED_VERSION
from kproxy.protocol.apis import (
    API_VERSIONS,
    APIS,
    CONTROLLER_PLANE_APIS,
    PRODUCE,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    WALKED_REQUESTS,
    api_name,
)
from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.errors import ApiDenied, ApiNotAllowed, ProtocolError, UnsupportedVersion
from kproxy.protocol.headers import RequestHeader
from kproxy.protocol.refusal import refusal_response, refusal_text
from kproxy.protocol.requests import produce_acks
from kproxy.protocol.walker import can_walk
from kproxy.session.audit import CHANGE_APIS
from kproxy.session.authorize import checked
from kproxy.session.inflight import InFlight
from kproxy.session.policy import ApiPolicy
from kproxy.session.tenancy import TENANT_APIS
from kproxy.session.topic_ids import translates
from kproxy.session.transactions import TRANSACTION_APIS

# Client listeners serve what a broker listener serves.
CLIENT_REFUSED_APIS = CONTROLLER_PLANE_APIS

# What happens to a request: forwarded as it came, walked (it may carry endpoints),
# answered with the policy's authorization error, answered by kproxy (an ApiVersions
# version it does not know, KIP-511), its connection closed (`check_request` says why),
# forwarded as it came and read for who the client is (SASL), read for the audit trail
# (and walked, when it may carry endpoints), or read for the transactional id it names.
FORWARD, WALK, DENY, ANSWER, CLOSE, IDENTIFY, AUDIT, TRANSACT = range(8)
# Or'ed into a route that lets a request pass: checked first against the listener's
# authorization rules (`kproxy.session.authorize`), by the general path.
AUTHORIZE = 8
# Or'ed into a Produce's route while a switchover's moved topic ids are translated
# (`kproxy.session.topic_ids`): by the general path, after any authorization.
TRANSLATE = 16
SASL_APIS = frozenset((SASL_HANDSHAKE, SASL_AUTHENTICATE))


def route_of(key: int, version: int, refused_apis: frozenset[int], denied: frozenset[int]) -> int:
    """The route of a request, by its API key and version: every admission rule."""
    info = APIS.get(key)
    if key in refused_apis:
        return CLOSE
    if info is None or version not in info.headers:
        return ANSWER if key == API_VERSIONS else CLOSE
    if key == SASL_HANDSHAKE and version == 0:
        return CLOSE
    if key in denied:
        return DENY
    if key in CHANGE_APIS:
        return AUDIT
    if key in TRANSACTION_APIS:
        return TRANSACT
    if key in WALKED_REQUESTS and can_walk(key, version, True):
        return WALK
    if key in SASL_APIS:
        return IDENTIFY
    return FORWARD


class Admission:
    """The routes of one listener's requests, from `route_of`, and the fast lane's
    share of them: the requests forwarded as they came whose header names a client
    (header v1 or v2), api key << 16 | version -> (request, response header version).
    Shared by the listener's sessions (`admission_for`); rebuilt when a reload gives
    the policy another set of refused APIs."""

    __slots__ = ("_routes", "lane", "policy", "refused_apis")

    def __init__(self, refused_apis: frozenset[int], policy: ApiPolicy) -> None:
        self.refused_apis = refused_apis
        self.policy = policy
        self._routes: dict[int, int] = {}
        self.lane: dict[int, tuple[int, int]] = {}
        self.rebuild()

    def rebuild(self) -> None:
        """Build the tables from the policy as it is now (`ApiPolicy.update` calls it)."""
        denied = self.policy.denied
        authorizer, tenancy = self.policy.authorizer, self.policy.tenancy
        api_rules = frozenset() if authorizer is None else authorizer.apis()
        moved = bool(self.policy.moved_topic_ids)
        routes: dict[int, int] = {}
        lane: dict[int, tuple[int, int]] = {}
        for key, info in APIS.items():
            for version, headers in info.headers.items():
                # One int key, no tuple to build per request; a negative version read
                # off the wire (masked to 16 bits) matches no entry.
                at = key << 16 | (version & 0xFFFF)
                route = route_of(key, version, self.refused_apis, denied)
                # A tenant's names are renamed too, and the cluster's APIs refused it.
                if (
                    (authorizer is not None or tenancy is not None)
                    and route in (FORWARD, WALK, AUDIT, TRANSACT)
                    and (
                        checked(key, version, api_rules)
                        or (tenancy is not None and key not in TENANT_APIS)
                    )
                ):
                    route |= AUTHORIZE
                if moved and route & ~AUTHORIZE == FORWARD and translates(key, version):
                    route |= TRANSLATE
                routes[at] = route
                # ApiVersions, once per connection, is left to the general path, which
                # answers a version it does not know; and on a listener with tenants,
                # every request, where each is counted for its tenant.
                if route == FORWARD and headers[0] >= 1 and key != API_VERSIONS and not tenancy:
                    lane[at] = headers
        self._routes, self.lane = routes, lane

    def route(self, key: int, version: int) -> int:
        route = self._routes.get(key << 16 | (version & 0xFFFF))
        if route is None:  # a key or version kproxy does not know
            return route_of(key, version, self.refused_apis, self.policy.denied)
        return route


def admission_for(policy: ApiPolicy, refused_apis: frozenset[int]) -> Admission:
    """The `Admission` of a policy and a listener role's refused APIs, one per pair."""
    made = policy.admissions.get(refused_apis)
    if made is None:
        made = policy.admissions[refused_apis] = Admission(refused_apis, policy)
    assert isinstance(made, Admission)
    return made


def closing_error(hdr: RequestHeader, refused_apis: frozenset[int]) -> ProtocolError:
    """Why a request routed to CLOSE (`route_of`) closes its connection."""
    key = hdr.api_key
    if key in refused_apis:
        return ApiNotAllowed(
            f"{api_name(key)} (api {key}) is a controller-plane API, not served to clients"
            " on this listener"
        )
    if api_name(key) == "Unknown":
        return UnsupportedVersion(f"unknown api key {key}", reason="unknown_api_key")
    if not hdr.known:
        return UnsupportedVersion(
            f"{api_name(key)} v{hdr.api_version} is not a version kproxy knows",
            reason="unknown_api_version",
        )
    return UnsupportedVersion(
        "SaslHandshake v0 (raw SASL tokens, pre-KIP-152) is not supported",
        reason="sasl_handshake_v0",
    )


def api_versions_fallback(correlation_id: int) -> bytes:
    """UNSUPPORTED_VERSION in an ApiVersions v0 body (header v0), naming kproxy's range."""
    low, high = SUPPORTED[API_VERSIONS]
    body = struct.pack(">ihihhh", correlation_id, UNSUPPORTED_VERSION, 1, API_VERSIONS, low, high)
    return struct.pack(">i", len(body)) + body


def refuse(frame: memoryview, hdr: RequestHeader, listener: str) -> bytes:
    """The authorization error a broker would answer this request with
    (`kproxy.protocol.refusal`); ApiDenied (the connection is closed) where no response
    can carry one."""
    key, version = hdr.api_key, hdr.api_version
    text = refusal_text(key, listener)
    if key == PRODUCE and produce_acks(frame, hdr.body_offset, len(frame), version) == 0:
        raise ApiDenied(f"{text} (acks=0: no response to carry the error)")
    # An answer echoes the request's entities: a bound against amplification.
    budget = max(1 << 20, 4 * len(frame))
    answer = refusal_response(
        key, version, hdr.correlation_id, frame, hdr.body_offset, text, budget
    )
    if answer is None:
        raise ApiDenied(f"{text} (the answer would pass {budget} bytes)")
    return answer


def admit(
    hdr: RequestHeader,
    frame: memoryview,
    size: int,
    now: float,
    admitted: list[tuple[int, int]],
    inflight: CorrelationTable,
) -> InFlight:
    """Record a request its route lets pass as in flight (and in ``admitted``)."""
    key = hdr.api_key
    admitted.append((key, size))
    # Produce with acks=0 expects no response: it must not hold an in-flight slot.
    expects_response = not (
        key == PRODUCE and produce_acks(frame, hdr.body_offset, len(frame), hdr.api_version) == 0
    )
    req = InFlight(key, hdr.api_version, hdr.response_header_version, hdr.client_id, now)
    inflight.add(hdr.correlation_id, req, expects_response)
    return req
