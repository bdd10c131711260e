"""The topic ids of the cluster a switchover left, named as the target's (sans-IO).

A topic id is its cluster's own (KIP-516): MirrorMaker copies a topic under the same
name and another id. A client a switchover moved still holds the old cluster's ids
until it refreshes its metadata (`metadata.max.age.ms`, five minutes by default), and
Produce v13+ names topics by id alone. The target answers such a Produce with
UNKNOWN_TOPIC_ID; an idempotent producer retries that batch, and a later batch, sent
after its metadata refresh, can be appended first on a partition where the target holds
no state for the producer: every retry of the earlier batch is then refused as out of
order until `delivery.timeout.ms` fails it (KAFKA-14359, seen with Kafka's Java
producer). So for a while after the move (`kproxy.runtime.switchover`), kproxy names
the target's id in place of the old one in Produce requests, and the old one again in
their answers, which the client matches to its request by id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

from kproxy.protocol.apis import PRODUCE
from kproxy.protocol.layout_codec import LayoutWriter
from kproxy.session import audit
from kproxy.session.response_edit import ResponseEdit, TopicNames

if TYPE_CHECKING:
    from collections.abc import Mapping

    from kproxy.protocol.headers import RequestHeader

PRODUCE_BY_ID: Final = 13  # the first Produce version to name topics by id (KIP-516)


class Translated(NamedTuple):
    """A Produce naming the target's ids, as `pieces` of `size` bytes (its records views
    of the client's frame), and the old id of each target id it names now."""

    pieces: list[bytes | memoryview]
    size: int
    old_ids: dict[bytes, bytes]


class Unrestricted:
    """The permissions of a response edited for its topic ids alone: everything."""

    __slots__ = ()

    def api_allowed(self, api_key: int) -> bool:
        return True

    def allows(self, api_key: int, kind: str, name: str) -> bool:
        return True


def translates(api_key: int, version: int) -> bool:
    """Whether requests of this API and version are translated while ids are moved."""
    return api_key == PRODUCE and version >= PRODUCE_BY_ID


def translate_produce(
    hdr: RequestHeader, frame: memoryview, moved: Mapping[bytes, bytes]
) -> Translated | None:
    """The Produce request frame (no size prefix) naming the target's ids (None: it
    names none of the moved ids, or is larger than kproxy reads, `audit.READ_LIMIT`).
    Raises MalformedMessage for a body that does not parse, ProtocolError
    `topic_ids_too_large` for more array elements than kproxy reads."""
    if len(frame) > audit.READ_LIMIT:
        return None
    # Records as views of an immutable frame only (a reader's buffer is reused).
    layout, value = audit.read_request(
        hdr, frame, "for its topic ids", "topic_ids_too_large", keep_tagged=True,
        views=type(frame.obj) is bytes,
    )  # fmt: skip
    old_ids: dict[bytes, bytes] = {}
    for topic in value.get("TopicData") or ():
        old = topic.get("TopicId")
        new = moved.get(old) if isinstance(old, bytes) else None
        if new is not None:
            topic["TopicId"] = new
            old_ids[new] = old
    if not old_ids:
        return None
    writer = LayoutWriter(True, 2 * len(frame) + (1 << 20))
    pieces = writer.pieces(layout, value, frame[: hdr.body_offset])
    return Translated(pieces, writer.size, old_ids)


def with_old_ids(
    edit: ResponseEdit | None, old_ids: dict[bytes, bytes], names: TopicNames
) -> ResponseEdit:
    """The edit of a translated Produce's answer: its ids named as the client sent them."""
    if edit is None:
        edit = ResponseEdit(Unrestricted(), names)
    edit.old_topic_ids = old_ids
    return edit
