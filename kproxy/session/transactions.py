"""The transactional ids a connection's client uses, so a switchover can abort their open
transactions on the cluster it leaves (`kproxy.runtime.transaction_abort`; sans-IO).

A transactional producer talks to its transaction coordinator with InitProducerId once,
then EndTxn at the end of every transaction (and AddOffsetsToTxn when it commits consumer
offsets, transactions v1). Each names its transactional id; an id is noted once the
coordinator answered that request without error, so a client cannot have kproxy act on
an id the cluster did not let it use. The requests are read on the general path (rare:
one per transaction); their responses are tested for their error code only.
"""

from __future__ import annotations

from typing import Final

from kproxy.protocol.entities import read_message
from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.headers import RequestHeader, parse_response_header
from kproxy.protocol.primitives import int16_in

INIT_PRODUCER_ID: Final = 22
ADD_OFFSETS_TO_TXN: Final = 25
END_TXN: Final = 26
TRANSACTION_APIS: Final = frozenset((INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN))
# A producer has one transactional id; a client that names more on one connection keeps
# its first few (a hostile one cannot make a switchover abort without end).
MAX_IDS_PER_CONNECTION: Final = 8


def transactional_id(hdr: RequestHeader, frame: memoryview) -> str | None:
    """The transactional id a request names (None: an idempotent producer's
    InitProducerId). A body that does not parse closes the connection (ProtocolError)."""
    read = read_message(hdr.api_key, True, hdr.api_version, frame, hdr.body_offset, 0)
    found = None if read is None else read[1].get("TransactionalId")
    return found if isinstance(found, str) else None


def answered_without_error(frame: memoryview, header_version: int) -> bool:
    """InitProducerId, AddOffsetsToTxn and EndTxn responses start with ThrottleTimeMs,
    then ErrorCode (every version)."""
    _, body = parse_response_header(frame, header_version)
    if body + 6 > len(frame):
        raise MalformedMessage("transaction response truncated before its error code")
    return int16_in(frame, body + 4) == 0


def note(ids: set[str] | None, found: str) -> set[str]:
    """`ids` with `found` (made on the first), at most MAX_IDS_PER_CONNECTION."""
    if ids is None:
        return {found}
    if len(ids) < MAX_IDS_PER_CONNECTION:
        ids.add(found)
    return ids
