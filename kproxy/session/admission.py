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
* SaslHandshake v0 is refused: raw SASL tokens follow it with no Kafka header, which
  kproxy cannot frame-check; every client since Kafka 1.0 uses v1 + SaslAuthenticate
  (KIP-152).
"""

from __future__ import annotations

import struct

from kproxy.protocol.api_versions import SUPPORTED, UNSUPPORTED_VERSION
from kproxy.protocol.apis import (
    API_VERSIONS,
    CONTROLLER_PLANE_APIS,
    PRODUCE,
    SASL_HANDSHAKE,
    WALKED_REQUESTS,
    api_name,
)
from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.errors import ApiDenied, ApiNotAllowed, UnsupportedVersion
from kproxy.protocol.headers import RequestHeader, parse_request_header
from kproxy.protocol.refusal import refusal_response, refusal_text
from kproxy.protocol.requests import produce_acks
from kproxy.session.inflight import InFlight

# Client listeners serve what a broker listener serves.
CLIENT_REFUSED_APIS = CONTROLLER_PLANE_APIS


def check_request(hdr: RequestHeader, refused_apis: frozenset[int]) -> None:
    """Raise the ProtocolError that closes the connection, or return if it may pass.

    An unknown ApiVersions version passes this check: `api_versions_fallback` answers it.
    """
    key = hdr.api_key
    if key in refused_apis:
        raise ApiNotAllowed(
            f"{api_name(key)} (api {key}) is a controller-plane API, not served to clients"
            " on this listener"
        )
    if not hdr.known:
        if api_name(key) == "Unknown":
            raise UnsupportedVersion(f"unknown api key {key}", reason="unknown_api_key")
        raise UnsupportedVersion(
            f"{api_name(key)} v{hdr.api_version} is not a version kproxy knows",
            reason="unknown_api_version",
        )
    if key == SASL_HANDSHAKE and hdr.api_version == 0:
        raise UnsupportedVersion(
            "SaslHandshake v0 (raw SASL tokens, pre-KIP-152) is not supported",
            reason="sasl_handshake_v0",
        )


def api_versions_fallback(correlation_id: int) -> bytes:
    """UNSUPPORTED_VERSION in an ApiVersions v0 body (header v0), naming kproxy's range."""
    low, high = SUPPORTED[API_VERSIONS]
    body = struct.pack(">ihihhh", correlation_id, UNSUPPORTED_VERSION, 1, API_VERSIONS, low, high)
    return struct.pack(">i", len(body)) + body


def refuse(frame: memoryview, refused_apis: frozenset[int], listener: str) -> bytes:
    """The authorization error a broker would answer this request with
    (`kproxy.protocol.refusal`); ApiDenied (the connection is closed) where no response
    can carry one."""
    hdr = parse_request_header(frame)
    check_request(hdr, refused_apis)
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
    frame: memoryview,
    size: int,
    now: float,
    admitted: list[tuple[int, int]],
    whole: bool,
    inflight: CorrelationTable,
    refused_apis: frozenset[int],
) -> RequestHeader | None:
    """Check a request's header and record it as in flight (and in ``admitted``).

    None for the start of a frame (``whole`` false) that kproxy may have to rewrite
    (nothing is recorded: it is read again when whole), and for an ApiVersions version
    kproxy does not know, which kproxy answers itself when nothing else is in flight
    (responses must keep their order).
    """
    hdr = parse_request_header(frame)
    key = hdr.api_key
    if key == API_VERSIONS and not hdr.known and whole and not inflight:
        return None
    check_request(hdr, refused_apis)
    if not whole and key in WALKED_REQUESTS:
        return None
    admitted.append((key, size))  # known: check_request refused unknown versions
    # Produce with acks=0 expects no response: it must not hold an in-flight slot.
    expects_response = not (
        key == PRODUCE and produce_acks(frame, hdr.body_offset, len(frame), hdr.api_version) == 0
    )
    inflight.add(
        hdr.correlation_id,
        InFlight(key, hdr.api_version, hdr.response_header_version, hdr.client_id, now),
        expects_response,
    )
    return hdr
