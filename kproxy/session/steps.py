"""What one call into a session returns: chunks to send, facts to observe, a close.

Plain classes with slots, so that the mypyc build makes them native (one is made per
read); the tuples they carry (`SessionClose`, `NodeLearned`) are in
`kproxy.session.records`, which stays Python."""

from __future__ import annotations

from kproxy.session.audit import AuditRecord
from kproxy.session.identity import Authentication
from kproxy.session.inflight import ResponseSeen
from kproxy.session.records import NodeLearned, SessionClose


class ClientStep:
    """The result of bytes from the client."""

    __slots__ = (
        "answers",
        "as_read",
        "close",
        "held",
        "pause_reading",
        "refused_keys",
        "requests",
        "throttle_ms",
        "to_upstream",
    )

    def __init__(self) -> None:
        self.to_upstream: list[bytes | memoryview] = []
        self.requests: list[tuple[int, int]] = []  # (api key, frame size) admitted
        self.pause_reading = False  # too many requests in flight: stop reading the client
        self.held = 0  # requests that wait for an in-flight slot
        self.close: SessionClose | None = None
        # Over a quota: stop reading the client for this long (kproxy.session.quota).
        self.throttle_ms = 0
        # kproxy's own answers (KIP-511, refusals) and the requests refused (`to_client`,
        # `refused`); None, no list made, for the many reads that have none.
        self.answers: list[bytes | memoryview] | None = None
        self.refused_keys: list[AuditRecord] | None = None
        # The fast lane took the whole read: its requests are forwarded as they were read,
        # `to_upstream` the read itself, and nothing else of this step is set.
        self.as_read = False

    @property
    def to_client(self) -> list[bytes | memoryview]:
        """kproxy's own answers to the client (KIP-511's, the policy's refusals)."""
        if self.answers is None:
            self.answers = []
        return self.answers

    @property
    def refused(self) -> list[AuditRecord]:
        """The requests answered with the listener's refusal."""
        if self.refused_keys is None:
            self.refused_keys = []
        return self.refused_keys


class UpstreamFacts:
    """What a read from the broker did besides sending responses on: released requests
    and what walking its responses found. Made only by a read that has any (a step's
    `more`): most reads have none."""

    __slots__ = (
        "audits",
        "authentications",
        "clamped",
        "learned",
        "redacted",
        "refused",
        "requests",
        "streamed",
        "to_upstream",
        "trimmed",
        "unmapped",
    )

    def __init__(self) -> None:
        # Requests that waited for an in-flight slot, released by these responses.
        self.to_upstream: list[bytes | memoryview] = []
        self.requests: list[tuple[int, int]] = []
        # Waiting requests answered with a refusal.
        self.refused: list[AuditRecord] = []
        self.learned: list[NodeLearned] = []
        self.unmapped: list[int] = []  # node ids whose endpoints were removed
        self.clamped: list[tuple[int, int]] = []  # ApiVersions: (dropped, lowered) keys
        self.redacted: list[tuple[int, int]] = []  # (api key, config values) redacted
        # Responses forwarded as they arrived: (api key, what their tail became).
        self.streamed: list[tuple[int, str]] = []
        # Responses with bytes after their message, kept from the client: (api key, bytes).
        self.trimmed: list[tuple[int, int]] = []
        # SASL exchanges these responses ended (`kproxy.session.identity`).
        self.authentications: list[Authentication] = []
        # Requests that changed the cluster, with their outcome (`kproxy.session.audit`).
        self.audits: list[AuditRecord] = []


class UpstreamStep:
    """The result of bytes from the broker (or of the listeners a step asked for)."""

    __slots__ = (
        "as_read",
        "close",
        "more",
        "needs_listeners",
        "responses",
        "resume_reading",
        "throttle_ms",
        "to_client",
    )

    def __init__(self) -> None:
        self.to_client: list[bytes | memoryview] = []
        self.responses: list[ResponseSeen] = []
        self.resume_reading = False  # in-flight requests fell back: read the client again
        self.close: SessionClose | None = None
        # Walk facts and released requests (`facts`); None: the read had none.
        self.more: UpstreamFacts | None = None
        # A Fetch response over its client's quota: stop reading the client this long.
        self.throttle_ms = 0
        # Listeners to open first (`nodes_needing_listeners`); None: none.
        self.needs_listeners: list[int] | None = None
        # The fast lane took the whole read: plain responses sent on as they came (at most
        # one chunk: the read, or the parts of a small response joined), or a part kept;
        # nothing else of this step is set.
        self.as_read = False

    def facts(self) -> UpstreamFacts:
        """This step's facts, made at the first one."""
        more = self.more
        if more is None:
            more = self.more = UpstreamFacts()
        return more

    @property
    def nodes_needing_listeners(self) -> list[int]:
        """Listeners to open before anything more is sent; then call
        `ProxySession.listeners_opened` for the responses held back for them."""
        return self.needs_listeners or []

    @nodes_needing_listeners.setter
    def nodes_needing_listeners(self, nodes: list[int]) -> None:
        self.needs_listeners = nodes or None

    # The facts by name, for whoever reads or fills one of them.
    @property
    def to_upstream(self) -> list[bytes | memoryview]:
        return self.facts().to_upstream

    @property
    def requests(self) -> list[tuple[int, int]]:
        return self.facts().requests

    @property
    def refused(self) -> list[AuditRecord]:
        return self.facts().refused

    @property
    def learned(self) -> list[NodeLearned]:
        return self.facts().learned

    @property
    def unmapped(self) -> list[int]:
        return self.facts().unmapped

    @property
    def clamped(self) -> list[tuple[int, int]]:
        return self.facts().clamped

    @property
    def redacted(self) -> list[tuple[int, int]]:
        return self.facts().redacted

    @property
    def streamed(self) -> list[tuple[int, str]]:
        return self.facts().streamed

    @property
    def trimmed(self) -> list[tuple[int, int]]:
        return self.facts().trimmed
