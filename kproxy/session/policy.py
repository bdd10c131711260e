"""A listener's API policy: which APIs its clients may call (sans-IO).

A gateway at a network boundary refuses what outsiders must not do (CreateTopics,
DeleteRecords, AlterConfigs...) while another listener serves everything. A refused
request is answered with the authorization error a broker would send
(`kproxy.protocol.refusal`), and ApiVersions on that listener no longer advertises the
refused APIs, so well-behaved clients do not try them: librdkafka and the Java client then
fail such a call at once with their own "unsupported by the broker" error. With
`advertise_denied` the refused APIs stay advertised, clients send them, and they get the
authorization error with kproxy's reason, as from a broker whose ACLs refuse them.

One object per proxy, shared by its sessions: a reload replaces `denied` in place, so
the new policy holds at once for established connections too (as a broker's ACL change
does).
"""

from __future__ import annotations

from typing import Protocol

from kproxy.protocol.api_versions import SUPPORTED
from kproxy.protocol.apis import API_VERSIONS, SASL_AUTHENTICATE, SASL_HANDSHAKE
from kproxy.session.authorization import Authorizer
from kproxy.session.response_edit import TopicNames
from kproxy.session.tenancy import Tenancy


class Routes(Protocol):
    """Tables built from a policy (`kproxy.session.admission.Admission`)."""

    def rebuild(self) -> None: ...


# What a client needs before it can ask anything: never refused.
ALWAYS_ALLOWED = frozenset((API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE))


class ApiPolicy:
    """The API keys refused on one listener."""

    __slots__ = (
        "admissions",
        "advertise_denied",
        "authorizer",
        "denied",
        "listener",
        "moved_topic_ids",
        "tenancy",
        "topic_names",
    )

    def __init__(
        self,
        listener: str,
        denied: frozenset[int] = frozenset(),
        advertise_denied: bool = False,
        authorizer: Authorizer | None = None,
        tenancy: Tenancy | None = None,
    ) -> None:
        self.listener = listener
        self.denied = denied - ALWAYS_ALLOWED
        self.advertise_denied = advertise_denied
        self.tenancy = tenancy  # the listener's tenants (`kproxy.session.tenancy`), if any
        # The listener's authorization rules (`kproxy.session.authorization`), if any,
        # and the topic ids its clients' Metadata answers named (kept across reloads).
        self.authorizer = authorizer
        self.topic_names = TopicNames()
        # The ids of the cluster a switchover left -> the target's, for a while after
        # it (`kproxy.session.topic_ids`); empty: none.
        self.moved_topic_ids: dict[bytes, bytes] = {}
        # Its routes per listener role (`kproxy.session.admission.admission_for`),
        # rebuilt by `update`.
        self.admissions: dict[frozenset[int], Routes] = {}

    def update(
        self,
        listener: str,
        denied: frozenset[int],
        advertise_denied: bool,
        authorizer: Authorizer | None = None,
        tenancy: Tenancy | None = None,
    ) -> None:
        self.listener = listener
        self.denied = denied - ALWAYS_ALLOWED
        self.advertise_denied = advertise_denied
        self.authorizer = authorizer
        self.tenancy = tenancy
        for routes in self.admissions.values():
            routes.rebuild()

    def move_topic_ids(self, moved: dict[bytes, bytes]) -> None:
        """Translate these topic ids in Produce requests from now on (empty: none)."""
        self.moved_topic_ids = moved
        for routes in self.admissions.values():
            routes.rebuild()

    def advertised(self, api_key: int) -> tuple[int, int] | None:
        """The versions ApiVersions offers for this key on this listener (None: dropped)."""
        if api_key in self.denied and not self.advertise_denied:
            return None
        return SUPPORTED.get(api_key)
