"""What one client connection's session holds (sans-IO): the state its two entry points
(`kproxy.session.session`), its fast lane (`kproxy.session.fast_lane`) and its requests'
way to the broker (`kproxy.session.forward`) read and change."""

from __future__ import annotations

from collections.abc import Container
from typing import Final

from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.frames import FrameReader
from kproxy.protocol.walker import Endpoint
from kproxy.session.admission import CLIENT_REFUSED_APIS, admission_for
from kproxy.session.authorization import Permissions
from kproxy.session.identity import Identity
from kproxy.session.mapping import AddressMapping
from kproxy.session.policy import ApiPolicy
from kproxy.session.quota import QuotaBook, QuotaBucket
from kproxy.session.records import Frame, Held, SessionLimits
from kproxy.session.streaming import StreamedResponse
from kproxy.session.tenancy import Tenant

# Requests at least this large (Produce batches) pass as they arrive (cut-through), their
# header and acks within these bytes (client and transactional ids are <= 32,767 bytes).
STREAM_REQUESTS_AFTER: Final = 65536


class SessionState:
    """What one client connection's session holds: its readers, requests in flight,
    responses held or streaming, requests waiting, and the shared rules it reads."""

    __slots__ = (
        "_paused_for_inflight",
        "_waiting",
        "admission",
        "authz_key",
        "authz_scope",
        "awaiting_success",
        "client_host",
        "client_reader",
        "controllers",
        "held",
        "identity",
        "inflight",
        "lane_client_id",
        "lane_client_id_raw",
        "limits",
        "mapping",
        "max_in_flight",
        "oauthbearer_claim",
        "policy",
        "quota",
        "quota_client_id",
        "quota_generation",
        "quotas",
        "server_name",
        "stream",
        "tenant",
        "transactional_ids",
        "upstream_reader",
    )

    def __init__(
        self,
        mapping: AddressMapping,
        limits: SessionLimits,
        refused_apis: frozenset[int] = CLIENT_REFUSED_APIS,
        policy: ApiPolicy | None = None,
        controllers: AddressMapping | None = None,
        awaiting_success: Container[str] | None = None,
        quotas: QuotaBook | None = None,
    ) -> None:
        self.mapping = mapping
        # Where the controllers of a KRaft quorum carried by kproxy are told to be: the
        # responses that name controller listeners (`QUORUM_RESPONSES`) are mapped by it.
        self.controllers = controllers
        # The clients ("" for none) awaiting a success to end a redirect's recovery, a live
        # view: theirs are the plain Produce and Fetch responses walked (None: all are).
        self.awaiting_success = awaiting_success
        self.limits = limits
        self.max_in_flight = limits.max_in_flight_requests  # read on every request
        self.policy = ApiPolicy("default") if policy is None else policy
        self.admission = admission_for(self.policy, refused_apis)
        self.client_reader = FrameReader(limits.max_frame_bytes, stream_after=STREAM_REQUESTS_AFTER)
        self.upstream_reader = FrameReader(limits.max_frame_bytes, limits.stream_responses_after)
        self.inflight = CorrelationTable()  # of InFlight
        self._paused_for_inflight = False
        # Responses walked but not yet sent, in order (a streamed one's tail among them);
        # None, not an empty list an idle connection would hold, when there are none.
        self.held: list[Held | StreamedResponse] | None = None
        self.stream: StreamedResponse | None = None  # a response forwarded as it arrives
        # Requests read while the in-flight limit was reached, in order (one read's worth:
        # the runtime stops reading the client meanwhile).
        self._waiting: list[Frame] | None = None
        # The client id the lane last decoded, as it came and as decoded.
        self.lane_client_id_raw = b""
        self.lane_client_id: str | None = ""
        # Client quotas (`kproxy.session.quota`), when any is configured: the client's
        # address (the runtime's: the PROXY protocol's when one came) and the rates it is
        # charged to, found at its first request and again when its client id changes.
        self.quotas = quotas
        self.client_host: str | None = None
        self.quota: QuotaBucket | None = None
        self.quota_client_id: str | None = None
        self.quota_generation = -1  # the book's generation `quota` was found under
        # Who is calling (`kproxy.session.identity`): None, no object an idle connection
        # holds, until TLS or a SASL exchange says (anonymous until then).
        self.identity: Identity | None = None
        self.oauthbearer_claim = "sub"  # the claim that names an OAUTHBEARER client
        # What the caller may do (`kproxy.session.authorization`), its tenant
        # (`kproxy.session.tenancy`), and the (rules, tenants, principal, client id)
        # they were found for (`kproxy.session.checks`).
        self.authz_scope: Permissions | None = None
        self.tenant: Tenant | None = None
        self.authz_key: tuple[object, object, str, str | None] | None = None
        self.server_name: str | None = None  # the TLS server name (SNI) the client sent
        # The transactional ids the client used (`kproxy.session.transactions`); None
        # until one was, as for every connection but a transactional producer's.
        self.transactional_ids: set[str] | None = None

    def cluster_view(self, ep: Endpoint) -> tuple[str, int]:
        """Where a request's endpoint is in the cluster (the client named kproxy's)."""
        return self.mapping.cluster_address(ep.host, ep.port)
