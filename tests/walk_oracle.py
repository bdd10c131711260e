"""What the walker finds that a response's skip tests must agree with: the oracle of the
scans' property tests (`tests/property/scan_support.py`) and of the fuzzer
(`tools/fuzz_protocol.py`), kept free of kio so that the fuzzer runs without it."""

from __future__ import annotations

from kproxy.protocol.errors import MalformedMessage
from kproxy.protocol.walker import walk


def walk_finds_nothing(frame: bytes, body: int, api_key: int, version: int) -> bool:
    """What the walker finds in the body would change nothing for a client awaiting no
    success: no endpoint, every partition with ErrorCode 0 and no leader hint. A walk
    refused only for a topic name that is not UTF-8 counts as nothing found: the scans
    do not decode names, as a streamed response's skim does not."""
    try:
        walked = walk(memoryview(frame), body, api_key, version, False)
    except MalformedMessage as exc:
        # The walker raises it `from` the UnicodeDecodeError; compiled by mypyc, the
        # raise sets no `__cause__`, and the decode error is its `__context__` alone.
        return isinstance(exc.__cause__ or exc.__context__, UnicodeDecodeError)
    quiet = all(
        o.error_code == 0 and o.leader_id is None and o.leader_epoch is None for o in walked.leaders
    )
    return quiet and not walked.endpoints
