"""The session: everything that decides what happens to one client connection's frames.

Sans-IO: bytes in, chunks out. A `ProxySession` owns both frame readers, the
correlation table and every admission and rewrite rule; the asyncio runtime
(`kproxy.runtime`) only moves bytes, opens the listeners a step asks for and hands the
step's facts to its observer.
"""

from kproxy.session.inflight import ResponseSeen
from kproxy.session.mapping import AddressMapping
from kproxy.session.records import NodeLearned, SessionClose, SessionLimits
from kproxy.session.session import ProxySession
from kproxy.session.steps import ClientStep, UpstreamStep

__all__ = [
    "AddressMapping",
    "ClientStep",
    "NodeLearned",
    "ProxySession",
    "ResponseSeen",
    "SessionClose",
    "SessionLimits",
    "UpstreamStep",
]
