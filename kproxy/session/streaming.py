"""A large response forwarded to the client while it still arrives (cut-through).

A response of at least `SessionLimits.stream_responses_after` bytes leaves kproxy as
its bytes come in, so the time to its first byte out does not grow with its size and
no copy of it is made:

* a response kproxy never walks is passed on as it is;
* a Fetch response is followed by a `ResponseSkim`: its record batches pass through
  untouched and unkept, everything up to its top-level tagged fields is forwarded at
  once but for its last `stream_responses_after` bytes, and those fields (the tail,
  where KIP-951 puts `NodeEndpoints`) are held until the last byte is in, with those
  last bytes (see `StreamedResponse`). The skeleton is then walked like any response
  (leaders, errors, endpoints), the tail rewritten and fitted to its announced length
  (`kproxy.protocol.tagged_fit`) over any bytes after the message, and sent. A
  skeleton the skim found plain (no error, no `CurrentLeader`) with an empty tail is
  not walked, unless the client awaits a success (a redirect's recovery,
  `kproxy.observe.leadership`): nothing in it would be acted on. Such a response is checked as
  far as the skim follows it (sizes, counts, the bound on tagged fields), not for what
  only the walk reads (a topic name's UTF-8).

Every other response that may carry endpoints is gathered whole first, as before: only
a Fetch response's endpoints all lie in its tail (pinned by a test for every version).
"""

from __future__ import annotations

from kproxy.protocol.apis import API_VERSIONS, FETCH, WALKED_RESPONSES
from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.frames import FrameStart
from kproxy.protocol.plan import Struct, plan_for
from kproxy.protocol.primitives import INT32
from kproxy.protocol.rewriter import Mapping, rewrite
from kproxy.protocol.skim import ResponseSkim
from kproxy.protocol.tagged_fit import cover_after, fit_tagged
from kproxy.protocol.walker import MAX_RESPONSE_ENDPOINTS, Endpoint, WalkResult, walk
from kproxy.session.audit import CHANGE_APIS
from kproxy.session.inflight import InFlight

# Responses followed by a skim while streamed: their endpoints are all in the tail.
SKIMMED_RESPONSES = frozenset((FETCH,))
_pack_size = INT32.pack


def streamable(api_key: int, version: int) -> bool:
    """Whether a large response to this request may be forwarded as it arrives."""
    if api_key in SKIMMED_RESPONSES:
        return plan_for(api_key, False, version) is not None
    # A change's response is read whole for its outcome (`kproxy.session.audit`).
    return (
        api_key not in WALKED_RESPONSES and api_key != API_VERSIONS and api_key not in CHANGE_APIS
    )


def endpoint_tags(plan: Struct) -> frozenset[int]:
    """The top-level tagged fields of a plan that carry endpoints."""
    tagged = plan[1] or {}
    return frozenset(tag for tag, field in tagged.items() if field[4])


class TailSent:
    """What the end of a streamed response became."""

    __slots__ = ("blanked", "chunk", "outcome", "removed", "rewritten")

    def __init__(
        self,
        chunk: bytes,
        outcome: str,
        rewritten: int,
        removed: list[Endpoint],
        blanked: int = 0,
    ):
        self.chunk = chunk
        # "none" (no endpoints), "rewritten", "padded" or "dropped" (see tagged_fit)
        self.outcome = outcome
        self.rewritten = rewritten
        self.removed = removed
        self.blanked = blanked  # bytes after the message, kept from the client


class StreamedResponse:
    """One response being forwarded as it arrives.

    A skimmed response's last `held_back` bytes (the size below which a response is
    gathered whole) wait until its last byte is in and its skeleton walked, wherever
    the skim places them: a broker that framed the message wrongly (a records length
    running into the tail, say) could otherwise have its `NodeEndpoints` sent as
    records before the fault shows. So a streamed response shows no more of a
    misframed message than a gathered one: as long as its tail is no longer than that."""

    __slots__ = (
        "_body_offset",
        "_endpoint_tags",
        "_send_until",
        "have",
        "held",
        "request",
        "size",
        "skim",
        "upstream_seconds",
        "walked",
    )

    def __init__(
        self,
        request: InFlight,
        start: FrameStart,
        body_offset: int,
        upstream_seconds: float,
        held_back: int,
    ) -> None:
        self.request = request
        self.size = start.size
        self.have = 0
        self.upstream_seconds = upstream_seconds
        self.walked: WalkResult | None = None
        self._body_offset = body_offset
        plan = None
        if request.api_key in SKIMMED_RESPONSES:
            plan = plan_for(request.api_key, False, request.version)
        self.skim = None if plan is None else ResponseSkim(plan, start.head[:body_offset])
        self._endpoint_tags = frozenset() if plan is None else endpoint_tags(plan)
        # The frame offset from which bytes wait for the walk, and those that wait (sent
        # before the tail: `kproxy.session.release`), as views of the reads they came
        # in: those are bytes, which nothing changes, so no copy is made.
        self._send_until = start.size if plan is None else start.size - held_back
        self.held: list[memoryview] = []

    def begin(self, head: memoryview) -> list[bytes | memoryview]:
        """The frame's size prefix and as much of its first bytes as may go now."""
        self.have = len(head)
        if self.skim is None:
            return [_pack_size(self.size), head]
        sendable = self._body_offset + self.skim.feed(head[self._body_offset :])
        return [_pack_size(self.size), self._sent(head, 0, sendable)]

    def more(self, data: memoryview) -> memoryview:
        """The part of the next bytes that may go now."""
        at = self.have
        self.have += len(data)
        if self.skim is None:
            return data
        # The bound in a local: compiled, a call in a slice bound of a memoryview runs
        # twice (mypyc tries a fast path first), and `feed` must see each byte once.
        sendable = self.skim.feed(data)
        return self._sent(data, at, sendable)

    def _sent(self, data: memoryview, at: int, sendable: int) -> memoryview:
        """Of the first `sendable` bytes of `data` (frame offset `at`), those before the
        held-back end: the others are kept for the tail."""
        room = self._send_until - at
        if sendable > room:
            room = max(room, 0)
            self.held.append(data[room:sendable])
            return data[:room]
        return data[:sendable]

    def passes(self, n: int) -> bool:
        """Whether the next `n` bytes may all go now unread (a response nothing walks,
        or bytes inside a Fetch response's records, short of the held-back end): if so
        they are counted, as `more` would have (short of the frame's end: the caller's
        reader says so)."""
        if self.have + n > self._send_until:
            return False
        skim = self.skim
        if skim is not None and not skim.passes_over(n):
            return False
        self.have += n
        return True

    @property
    def complete(self) -> bool:
        return self.have >= self.size

    def finish(self, walk_plain: bool) -> WalkResult | None:
        """The last byte is in: walk the skeleton (None: nothing was followed, or it is
        plain and `walk_plain` is False)."""
        skim = self.skim
        if skim is None:
            return None
        skim.finish()
        if not walk_plain and skim.plain():
            return None
        self.walked = walk(
            memoryview(skim.skeleton),
            self._body_offset,
            self.request.api_key,
            self.request.version,
            False,
            MAX_RESPONSE_ENDPOINTS,
        )
        return self.walked

    def tail(self, told: Mapping) -> TailSent:
        """The held tail, rewritten to the addresses clients see, at its own length.

        Bytes after the message (as the walk read it) are part of the held tail but of
        no field, so no rewrite reaches them: they never leave kproxy. The frame size
        already went out, so they are covered instead: the message's tagged fields are
        refitted over them (`kproxy.protocol.tagged_fit`)."""
        skim, walked = self.skim, self.walked
        if skim is None:
            return TailSent(b"", "none", 0, [])
        skeleton, start = skim.skeleton, skim.tail_start
        length = len(skeleton) - start
        # Not walked: plain, its tail the empty one with nothing after it.
        end = len(skeleton) if walked is None else walked.end
        if end < start:  # the skim and the walk follow one plan: they agree on this
            raise MalformedMessage("the walk ended before the tail a skim reached")
        blanked = len(skeleton) - end
        if walked is None or not walked.endpoints:
            if not blanked:
                return TailSent(bytes(skeleton[start:]), "none", 0, [])
            chunk = cover_after(skeleton[start:end], length)
            return TailSent(chunk, "none", 0, [], blanked)
        rw = rewrite(memoryview(skeleton)[:end], walked.endpoints, told)
        # The rewrite changes only the tail (every endpoint of a skimmed response is in
        # it) and the frame size; the frame size already went out, so the tail is cut
        # from the rewritten skeleton and fitted to the length it was announced with.
        rewritten = b"".join(rw.chunks)[4 + start :]
        chunk, outcome = fit_tagged(rewritten, length, self._endpoint_tags)
        if outcome == "dropped":
            return TailSent(chunk, outcome, 0, walked.endpoints, blanked)
        return TailSent(chunk, outcome, len(rw.rewritten), rw.removed, blanked)
