"""Which request each response on a connection answers.

Kafka answers the requests of one connection in order, each response carrying its
request's correlation id. Produce with acks=0 normally gets no response at all, yet
some brokers (librdkafka's mock cluster among them) do answer it. So acks=0 requests
are kept aside, outside the in-flight count, in a bounded table: answered if an answer
comes, and forgotten as soon as any later request is answered, since by then no
answer for them can come any more. When the table overflowed (a broker that answers
acks=0 requests far behind), a response nobody waits for is taken as the answer to a
forgotten acks=0 request, read as the latest one was sent; it is still walked and
rewritten like any other response, so nothing leaks.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from kproxy.protocol.errors import MalformedMessage


class CorrelationTable:
    """Each request awaiting its response, by correlation id: an entry of the caller's,
    given back as it was filed.

    Not generic: mypyc gives a compiled class with a Python base (`typing.Generic`
    among them) a `__dict__` and a `__weakref__` slot, 16 bytes on every connection.
    What it gives back is typed `Any`, so that the session's annotated assignment
    (`req: InFlight | None = ...`) takes it back as its `InFlight`: a `typing.cast` is a
    Python call in pure Python, once per response on the fast lane; compiled, the
    assignment checks the type as the cast did."""

    __slots__ = (
        "_expected",
        "_latest_unanswered",
        "_max_unanswered",
        "_overflowed",
        "_seq",
        "_unanswered",
    )

    def __init__(self, max_unanswered: int = 1024) -> None:
        # None while no request awaits a response: an emptied dict keeps the table its
        # entries took (224 bytes with the dict after one entry), which every idle
        # connection would hold. Making one per busy spell costs ~40 ns.
        self._expected: dict[int, tuple[int, object]] | None = None
        # Made at the first acks=0 request: most connections never send one, and an
        # empty OrderedDict is ~140 bytes an idle connection would hold.
        self._unanswered: OrderedDict[int, tuple[int, object]] | None = None
        self._max_unanswered = max_unanswered
        self._seq = 0
        self._overflowed = False
        self._latest_unanswered: object | None = None

    def add(self, correlation_id: int, entry: object, expects_response: bool = True) -> None:
        if expects_response:
            self.add_below(correlation_id, entry, 0)
            return
        expected = self._expected
        if expected is not None and correlation_id in expected:
            raise _reused(correlation_id)
        self._seq += 1
        unanswered = self._unanswered
        if unanswered is None:
            unanswered = self._unanswered = OrderedDict()
        unanswered.pop(correlation_id, None)
        unanswered[correlation_id] = (self._seq, entry)
        self._latest_unanswered = entry
        if len(unanswered) > self._max_unanswered:
            unanswered.popitem(last=False)
            self._overflowed = True

    def add_below(self, correlation_id: int, entry: object, limit: int) -> bool:
        """Add a request that expects a response if, with it, fewer than `limit` await
        theirs (0: no limit). False: not added, the table unchanged. The fast lane's
        test and record in one call, where `len` and `add` were two on every request."""
        expected = self._expected
        if expected is None:
            if limit == 1:
                return False
            self._seq += 1
            self._expected = {correlation_id: (self._seq, entry)}
            return True
        if correlation_id in expected:
            raise _reused(correlation_id)
        if 0 < limit <= len(expected) + 1:
            return False
        self._seq += 1
        expected[correlation_id] = (self._seq, entry)
        return True

    def pop(self, correlation_id: int) -> Any:
        """The request a response answers, or None if no request is waiting for it."""
        expected = self._expected
        item = None
        if expected is not None:
            item = expected.get(correlation_id)  # get and del: compiled, no method call
            if item is not None:
                del expected[correlation_id]
                if not expected:
                    self._expected = None
        unanswered = self._unanswered
        if item is None:
            item = None if unanswered is None else unanswered.pop(correlation_id, None)
            if item is None:
                return self._latest_unanswered if self._overflowed else None
        seq = item[0]
        while unanswered:
            first = next(iter(unanswered.values()))
            if first[0] > seq:
                break
            unanswered.popitem(last=False)
        return item[1]

    def answered(self, correlation_id: int) -> None:
        """The request `peek` has just found for `correlation_id` was answered: out of
        the table, as `pop` would take it. The fast lane's, which peeks before it
        decides: `pop`'s tests a second time, on every response it takes, were half of
        `pop`'s cost."""
        if self._unanswered:  # acks=0 requests to forget with it: `pop` does that
            self.pop(correlation_id)
            return
        expected = self._expected
        if expected is not None:
            del expected[correlation_id]
            if not expected:
                self._expected = None

    def peek(self, correlation_id: int) -> Any:
        """The request awaiting the response `correlation_id`, left in the table."""
        expected = self._expected
        item = None if expected is None else expected.get(correlation_id)
        return None if item is None else item[1]

    def __len__(self) -> int:
        """Requests waiting for a response (acks=0 requests are not counted)."""
        return 0 if self._expected is None else len(self._expected)

    @property
    def unanswered(self) -> int:
        return 0 if self._unanswered is None else len(self._unanswered)


def _reused(correlation_id: int) -> MalformedMessage:
    return MalformedMessage(
        f"correlation id {correlation_id} reused while in flight",
        reason="duplicate_correlation_id",
    )
