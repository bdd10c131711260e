"""The fuzzer's checks of the two places where kproxy decides not to walk a response.

* The fast lane's scans (`kproxy.protocol.fetch_scan`, `kproxy.protocol.produce_scan`)
  read every Produce and Fetch response a broker sends, unguarded: anything they raise
  is a bug, ProtocolError included. When one calls a body plain, the lane forwards it
  unwalked, so the walker must find nothing in it that kproxy would act on; and a scan
  that ends at ``stop`` read nothing past it, so the body cut there must say the same.
* A large Fetch response is followed by `kproxy.protocol.skim.ResponseSkim` while it is
  forwarded as it arrives (`kproxy.session.streaming`). When the skim calls it plain it
  is not walked either. Otherwise its skeleton is walked instead of the frame, so the
  skeleton must tell the walker what the whole frame does: the same addresses and the
  same leadership. A frame the walker reads, the skim reads too (they follow one plan).

A walk refused only because a topic name is not UTF-8 counts as finding nothing: the
scans and the skim do not decode names (`tests.walk_oracle`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kproxy.protocol.apis import FETCH, PRODUCE
from kproxy.protocol.errors import ProtocolError
from kproxy.protocol.fetch_scan import fetch_response_is_plain
from kproxy.protocol.found import WalkResult
from kproxy.protocol.plan import plan_for
from kproxy.protocol.produce_scan import produce_response_is_plain
from kproxy.protocol.skim import ResponseSkim
from kproxy.protocol.walker import walk
from tests.walk_oracle import walk_finds_nothing

_SCANS: Final = {PRODUCE: produce_response_is_plain, FETCH: fetch_response_is_plain}
# Bytes of a next frame in the same read, after a body the scan is told ends earlier.
_NEXT_FRAME: Final = b"\x00\x00\x00\x08\x00\x00\x00\x01\x00\x00\x00\x00"


def check_scan(frame: bytes, body: int, stop: int, api_key: int, version: int) -> None:
    """The scan of `api_key`'s response (if it has one) over frame[body:stop], with bytes
    of a next frame after `stop`."""
    scan = _SCANS.get(api_key)
    if scan is None or not 0 <= body <= stop <= len(frame):
        return
    data = frame[:stop] + _NEXT_FRAME
    try:
        plain = scan(data, body, stop, version)
    except Exception as exc:  # the lane calls it unguarded: any exception is a bug
        raise AssertionError(f"the scan raised {type(exc).__name__}: {exc}") from exc
    if plain and plan_for(api_key, False, version) is not None:
        _finds_nothing(frame[:stop], body, api_key, version, "the scan")


def check_skim(
    frame: bytes, body: int, version: int, pieces: Iterable[bytes], whole: WalkResult | None
) -> None:
    """A Fetch response body fed to a skim in `pieces` (its bytes from `body` on), as
    the stream forwards them: a piece inside a record set is passed over unread when it
    can be, as `StreamedResponse.passes` does. `whole` is the walk of the frame (None:
    the walker refused it), which the fuzzer has made already."""
    plan = plan_for(FETCH, False, version)
    if plan is None or body > len(frame):
        return
    skim = ResponseSkim(plan, frame[:body])
    try:
        for n, piece in enumerate(pieces):
            if n % 2 and skim.passes_over(len(piece)):
                continue
            skim.feed(memoryview(piece))
        skim.finish()
    except ProtocolError as exc:
        assert whole is None, f"the skim refused a frame the walker reads: {exc}"
        return
    if skim.plain():
        _finds_nothing(frame, body, FETCH, version, "the skim")
    if whole is None:
        return
    try:
        skeleton = walk(memoryview(skim.skeleton), body, FETCH, version, False)
    except ProtocolError as exc:
        raise AssertionError(f"the walker refused the skeleton of a frame it reads: {exc}") from exc
    assert _told(skeleton) == _told(whole), "the skeleton tells the walker something else"


def _finds_nothing(frame: bytes, body: int, api_key: int, version: int, who: str) -> None:
    """What `who` let pass unwalked, the walker finds nothing in. Raised as an
    AssertionError, whatever the walker raises: the fuzzer takes a ProtocolError for a
    refusal that is fine."""
    try:
        nothing = walk_finds_nothing(frame, body, api_key, version)
    except ProtocolError as exc:
        raise AssertionError(f"{who} skipped what the walker refuses: {exc}") from exc
    assert nothing, f"{who} skipped what the walker acts on"


def _told(found: WalkResult) -> tuple[object, ...]:
    """What a walk tells kproxy, without where it lies in the frame."""
    endpoints = [(e.path, e.node_id, e.host, e.port, e.rack) for e in found.endpoints]
    return tuple(endpoints), tuple(found.leaders)
