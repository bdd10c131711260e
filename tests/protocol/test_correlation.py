import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproxy.protocol.correlation import CorrelationTable
from kproxy.protocol.errors import ProtocolError


def test_expected_responses_are_matched_and_counted() -> None:
    t = CorrelationTable()
    t.add(1, "a")
    t.add(2, "b")
    assert len(t) == 2
    assert t.pop(1) == "a"
    assert t.pop(1) is None
    assert len(t) == 1


def test_duplicate_correlation_id_in_flight_is_a_protocol_error() -> None:
    t = CorrelationTable()
    t.add(7, "a")
    with pytest.raises(ProtocolError) as err:
        t.add(7, "b")
    assert err.value.reason == "duplicate_correlation_id"


def test_acks_zero_is_not_in_flight_but_may_be_answered() -> None:
    t = CorrelationTable()
    t.add(1, "produce acks=0", expects_response=False)
    assert len(t) == 0 and t.unanswered == 1
    assert t.pop(1) == "produce acks=0"
    assert t.unanswered == 0


def test_unanswered_requests_are_forgotten_once_a_later_one_is_answered() -> None:
    t = CorrelationTable()
    t.add(1, "p1", expects_response=False)
    t.add(2, "p2", expects_response=False)
    t.add(3, "metadata")
    t.add(4, "p4", expects_response=False)
    assert t.pop(3) == "metadata"
    # Responses come in order: 1 and 2 can no longer be answered; 4 still can.
    assert t.unanswered == 1
    assert t.pop(1) is None
    assert t.pop(4) == "p4"


def test_unanswered_requests_are_bounded() -> None:
    t = CorrelationTable(max_unanswered=10)
    for i in range(1000):
        t.add(i, i, expects_response=False)
    assert t.unanswered == 10
    assert t.pop(999) == 999
    # An answer to a request the table had to forget is read like the latest acks=0 one.
    assert t.pop(5) == 999


def test_unknown_response_without_overflow_is_none() -> None:
    t = CorrelationTable(max_unanswered=10)
    t.add(1, 1, expects_response=False)
    assert t.pop(12345) is None


@pytest.mark.parametrize("limit", [1, 2, 3, 5])
def test_add_below_records_only_while_fewer_than_the_limit_would_await(limit: int) -> None:
    """`add_below` is `add` when, with the request, fewer than `limit` await responses;
    otherwise it refuses and leaves the table as it was (the fast lane's test)."""
    t = CorrelationTable()
    added = [c for c in range(6) if t.add_below(c, f"r{c}", limit)]
    assert added == list(range(limit - 1))
    assert len(t) == limit - 1
    assert t.pop(limit - 1) is None  # the refused one was never recorded
    for c in added:
        assert t.pop(c) == f"r{c}"
    assert t.add_below(9, "r9", 0) and t.add_below(10, "r10", 0)  # 0: no limit
    with pytest.raises(ProtocolError) as err:
        t.add_below(9, "again", 0)
    assert err.value.reason == "duplicate_correlation_id"
    assert t.pop(9) == "r9"


def _filled(requests: list[tuple[int, bool]]) -> CorrelationTable:
    table = CorrelationTable(max_unanswered=3)
    for correlation_id, expects in requests:
        table.add(correlation_id, f"r{correlation_id}", expects_response=expects)
    return table


@given(
    st.lists(st.tuples(st.integers(0, 30), st.booleans()), max_size=12, unique_by=lambda r: r[0]),
    st.data(),
)
def test_answered_takes_what_peek_found_as_pop_would(
    requests: list[tuple[int, bool]], data: st.DataObject
) -> None:
    """The fast lane's peek then `answered` leaves the table as `pop` does: the acks=0
    requests sent before the answered one forgotten, the others still answerable."""
    expected = [correlation_id for correlation_id, expects in requests if expects]
    if not expected:
        return
    answered = data.draw(st.sampled_from(expected))
    popped, peeked = _filled(requests), _filled(requests)
    assert popped.pop(answered) == peeked.peek(answered) == f"r{answered}"
    peeked.answered(answered)
    assert (len(peeked), peeked.unanswered) == (len(popped), popped.unanswered)
    for correlation_id in range(31):
        assert peeked.pop(correlation_id) == popped.pop(correlation_id)


@given(
    st.lists(
        st.tuples(st.sampled_from(["add", "add_acks0", "pop", "peek_answered"]), st.integers(0, 5))
    )
)
def test_requests_in_flight_are_matched_however_many_await(ops: list[tuple[str, int]]) -> None:
    """One request in flight is kept apart from the others (no dict per round trip):
    with any mix of one and several awaiting, and acks=0 requests among them, every
    response finds what a plain model of the rules finds (module docstring), once."""
    table = CorrelationTable()
    awaiting: dict[int, tuple[int, str]] = {}  # by correlation id: (order sent, entry)
    unanswered: dict[int, tuple[int, str]] = {}  # acks=0, oldest first

    def answer(correlation_id: int) -> str | None:
        item = awaiting.pop(correlation_id, None) or unanswered.pop(correlation_id, None)
        if item is None:
            return None
        for sent_before in [c for c, (order, _) in unanswered.items() if order <= item[0]]:
            del unanswered[sent_before]
        return item[1]

    for order, (op, correlation_id) in enumerate(ops):
        entry = f"r{correlation_id}.{order}"
        if op in ("add", "add_acks0") and correlation_id in awaiting:
            with pytest.raises(ProtocolError):
                table.add(correlation_id, entry, expects_response=op == "add")
        elif op == "add":
            assert table.add_below(correlation_id, entry, 0)
            awaiting[correlation_id] = (order, entry)
        elif op == "add_acks0":
            table.add(correlation_id, entry, expects_response=False)
            unanswered.pop(correlation_id, None)
            unanswered[correlation_id] = (order, entry)
        elif op == "pop":
            assert table.pop(correlation_id) == answer(correlation_id)
        else:
            found = table.peek(correlation_id)
            assert found == (awaiting[correlation_id][1] if correlation_id in awaiting else None)
            if found is not None:
                table.answered(correlation_id)
                answer(correlation_id)
        assert (len(table), table.unanswered) == (len(awaiting), len(unanswered))
        assert bool(table) == bool(awaiting)
