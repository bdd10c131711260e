"""After a switchover, how long each client took to work again on the target cluster.

A switchover (`kproxy.runtime.switchover`) closes every client connection; clients
reconnect through the same kproxy addresses, re-learn metadata and retry. What an
operator wants to know is how long each client was without service: from the fence's
start to the client's first successful Produce, and to its first successful Fetch (a
partition answered without error), on the target.

Plain Produce and Fetch responses go by without being walked (`kproxy.session.fast_lane`),
so for `WINDOW_SECONDS` after the fence lifts, a new session is given a view of the
awaited clients (`ResumeWatch`) that also names every client not yet resumed: its data
responses are walked, their partition errors reach `Resumption.observe`, and once its
client has resumed both ways (or the window ends) the session gets the plain view back.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Container, Iterable
from typing import TYPE_CHECKING

from kproxy.observe.leadership import FETCH, PRODUCE

if TYPE_CHECKING:
    from kproxy.protocol.walker import LeaderObservation
    from kproxy.session.state import SessionState

# How long after the fence lifts clients are watched. Clients that only produce (or only
# fetch) have their responses walked this long; long enough for a client's retry backoff
# and metadata refresh (librdkafka's and Java's top out at seconds), short enough that
# the walking stops soon after a switchover.
WINDOW_SECONDS = 60.0
MAX_CLIENTS = 10_000  # client ids remembered per switchover: bounded against churn
RESUMED_APIS = frozenset((PRODUCE, FETCH))


class Resumption:
    """The clients of the last switchover: when each first succeeded on the target."""

    def __init__(
        self,
        *,
        window_seconds: float = WINDOW_SECONDS,
        max_clients: int = MAX_CLIENTS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window_seconds = window_seconds
        self.max_clients = max_clients
        self._monotonic = monotonic
        self.sequence = 0  # switchovers fenced so far: tells one switchover's claims apart
        self.began = 0.0
        self.lifted: float | None = None  # None while fenced, and before any switchover
        self.until = -math.inf  # when the watch ends
        self.trigger = self.source = self.target = ""
        self.first: dict[tuple[str, int], float] = {}  # (client, api) -> seconds
        self.done: set[str] = set()  # clients resumed both ways
        self.over_cap = 0  # first successes not recorded: MAX_CLIENTS reached

    def fenced(self, trigger: str, source: str, target: str) -> None:
        """A switchover began: forget the last one's clients, watch from now on (for a
        window from now, should the fence never be reported lifted)."""
        self.sequence += 1
        self.began = self._monotonic()
        self.lifted, self.until = None, self.began + self.window_seconds
        self.trigger, self.source, self.target = trigger, source, target
        self.first, self.done = {}, set()

    def lift(self) -> None:
        """The fence lifted: what succeeds from now on succeeds on the target."""
        self.lifted = self._monotonic()
        self.until = self.lifted + self.window_seconds

    def awaits(self, client: str) -> bool:
        """Whether `client`'s data responses are still to be walked."""
        return client not in self.done and self._monotonic() < self.until

    def observe(
        self, api_key: int, client: str, observations: Iterable[LeaderObservation]
    ) -> float | None:
        """Seconds from the fence's start to `client`'s first success of `api_key` on
        the target, when this walked response is that success; else None."""
        if self.lifted is None or api_key not in RESUMED_APIS:
            return None
        key = (client, api_key)
        if key in self.first or not any(obs.error_code == 0 for obs in observations):
            return None
        now = self._monotonic()
        if now >= self.until:
            return None
        if len(self.first) >= self.max_clients:
            self.over_cap += 1
            return None
        seconds = now - self.began
        self.first[key] = seconds
        other = FETCH if api_key == PRODUCE else PRODUCE
        if (client, other) in self.first:
            self.done.add(client)
        return seconds

    def watch(self, shared: Container[str], session: SessionState) -> Container[str] | None:
        """What a new session's `awaiting_success` is: a `ResumeWatch` while clients are
        watched, else None (the shared view, as always)."""
        if self._monotonic() >= self.until:
            return None
        return ResumeWatch(self, shared, session)


class ResumeWatch:
    """One session's awaited clients while a switchover's clients are watched: the shared
    view's (redirect recoveries), and every client not yet resumed. When neither holds it
    hands the session the shared view back, so the watch costs nothing afterwards."""

    __slots__ = ("resumption", "session", "shared")

    def __init__(
        self, resumption: Resumption, shared: Container[str], session: SessionState
    ) -> None:
        self.resumption = resumption
        self.shared = shared
        self.session: SessionState | None = session

    def __contains__(self, client: object) -> bool:
        if client in self.shared:
            return True
        if isinstance(client, str) and self.resumption.awaits(client):
            return True
        session = self.session
        if session is not None:
            session.awaiting_success = self.shared
            self.session = None  # no cycle left between the session and its watch
        return False
