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


class _Unanswered:
    """A connection's acks=0 requests, made at its first: most connections never send
    one, and what they hold idle stays the smaller for it."""

    __slots__ = ("entries", "latest", "limit", "overflowed", "seq")

    def __init__(self, limit: int) -> None:
        # By correlation id: (sequence, entry), oldest first.
        self.entries: OrderedDict[int, tuple[int, object]] = OrderedDict()
        self.limit = limit
        # Numbers the requests sent from the first acks=0 one on, in order, so that an
        # answer says which acks=0 requests sent before it can no longer be answered.
        self.seq = 0
        self.overflowed = False
        self.latest: object | None = None


class CorrelationTable:
    """Each request awaiting its response, by correlation id: an entry of the caller's
    (never None), given back as it was filed.

    Not generic: mypyc gives a compiled class with a Python base (`typing.Generic`
    among them) a `__dict__` and a `__weakref__` slot, 16 bytes on every connection.
    What it gives back is typed `Any`, so that the session's annotated assignment
    (`req: InFlight | None = ...`) takes it back as its `InFlight`: a `typing.cast` is a
    Python call in pure Python, once per response on the fast lane; compiled, the
    assignment checks the type as the cast did."""

    __slots__ = (
        "_expected",
        "_max_unanswered",
        "_one_entry",
        "_one_id",
        "_one_seq",
        "_unanswered",
        "latest_id",
    )

    def __init__(self, max_unanswered: int = 1024) -> None:
        # One request awaiting its response, the whole table for a client that sends one
        # at a time, is kept in three slots: a dict made and freed on every round trip,
        # with its keys and an entry tuple, cost a compiled small pair a tenth of its
        # instructions (docs/performance.md, "One request in flight"). `_one_entry`
        # None: the slot is free. `_one_seq` stays 0 until the connection's first acks=0
        # request, as every sequence does (`add_below`).
        self._one_entry: object | None = None
        self._one_id = 0
        self._one_seq = 0
        # Every other request awaiting a response; None while there is none: an emptied
        # dict keeps the table its entries took (224 bytes with the dict after one
        # entry), which every idle connection would hold.
        self._expected: dict[int, tuple[int, object]] | None = None
        self._unanswered: _Unanswered | None = None
        self._max_unanswered = max_unanswered
        # The correlation id of the request that expects a response added last: while any
        # awaits one, it does (a connection's responses come in order), and what kproxy
        # answers itself goes after its response.
        self.latest_id = 0

    def add(self, correlation_id: int, entry: object, expects_response: bool = True) -> None:
        if expects_response:
            self.add_below(correlation_id, entry, 0)
            return
        if self._awaits(correlation_id):
            raise _reused(correlation_id)
        unanswered = self._unanswered
        if unanswered is None:
            unanswered = self._unanswered = _Unanswered(self._max_unanswered)
        unanswered.seq += 1
        entries = unanswered.entries
        entries.pop(correlation_id, None)
        entries[correlation_id] = (unanswered.seq, entry)
        unanswered.latest = entry
        if len(entries) > unanswered.limit:
            entries.popitem(last=False)
            unanswered.overflowed = True

    def add_below(self, correlation_id: int, entry: object, limit: int) -> bool:
        """Add a request that expects a response if, with it, fewer than `limit` await
        theirs (0: no limit). False: not added, the table unchanged. The fast lane's
        test and record in one call, where `len` and `add` were two on every request."""
        expected = self._expected
        if self._one_entry is None and expected is None and self._unanswered is None:
            if limit == 1:
                return False
            self._one_entry = entry
            self._one_id = self.latest_id = correlation_id
            return True
        if self._awaits(correlation_id):
            raise _reused(correlation_id)
        if 0 < limit <= len(self) + 1:
            return False
        # Sent before any acks=0 request, a request is numbered 0: its answer forgets none.
        unanswered = self._unanswered
        seq = 0
        if unanswered is not None:
            unanswered.seq += 1
            seq = unanswered.seq
        if self._one_entry is None:
            self._one_entry = entry
            self._one_id = correlation_id
            self._one_seq = seq
        elif expected is None:
            self._expected = {correlation_id: (seq, entry)}
        else:
            expected[correlation_id] = (seq, entry)
        self.latest_id = correlation_id
        return True

    def _awaits(self, correlation_id: int) -> bool:
        """Whether a request that expects a response has `correlation_id`."""
        if self._one_entry is not None and self._one_id == correlation_id:
            return True
        expected = self._expected
        return expected is not None and correlation_id in expected

    def _take(self, correlation_id: int) -> tuple[int, object] | None:
        """The (sequence, entry) of the request that expects the response
        `correlation_id`, out of the table; None if there is none."""
        one = self._one_entry
        if one is not None and self._one_id == correlation_id:
            self._one_entry = None
            return self._one_seq, one
        expected = self._expected
        if expected is None:
            return None
        item = expected.get(correlation_id)  # get and del: compiled, no method call
        if item is not None:
            del expected[correlation_id]
            if not expected:
                self._expected = None
        return item

    def pop(self, correlation_id: int) -> Any:
        """The request a response answers, or None if no request is waiting for it."""
        item = self._take(correlation_id)
        unanswered = self._unanswered
        if unanswered is None:
            return None if item is None else item[1]
        entries = unanswered.entries
        if item is None:
            item = entries.pop(correlation_id, None)
            if item is None:
                return unanswered.latest if unanswered.overflowed else None
        seq = item[0]
        while entries:
            first = next(iter(entries.values()))
            if first[0] > seq:
                break
            entries.popitem(last=False)
        return item[1]

    def answered(self, correlation_id: int) -> None:
        """The request `peek` has just found for `correlation_id` was answered: out of
        the table, as `pop` would take it. The fast lane's, which peeks before it
        decides: `pop`'s tests a second time, on every response it takes, were half of
        `pop`'s cost."""
        unanswered = self._unanswered
        if unanswered is not None and unanswered.entries:  # to forget with it: `pop` does
            self.pop(correlation_id)
            return
        if self._one_entry is not None and self._one_id == correlation_id:
            self._one_entry = None
            return
        expected = self._expected
        if expected is not None:
            del expected[correlation_id]
            if not expected:
                self._expected = None

    def peek(self, correlation_id: int) -> Any:
        """The request awaiting the response `correlation_id`, left in the table."""
        one = self._one_entry
        if one is not None and self._one_id == correlation_id:
            return one
        expected = self._expected
        item = None if expected is None else expected.get(correlation_id)
        return None if item is None else item[1]

    def __len__(self) -> int:
        """Requests waiting for a response (acks=0 requests are not counted)."""
        return (self._one_entry is not None) + (
            0 if self._expected is None else len(self._expected)
        )

    @property
    def unanswered(self) -> int:
        return 0 if self._unanswered is None else len(self._unanswered.entries)


def _reused(correlation_id: int) -> MalformedMessage:
    return MalformedMessage(
        f"correlation id {correlation_id} reused while in flight",
        reason="duplicate_correlation_id",
    )
