"""A request waiting for its response: one per request in flight, made and read on
every round trip, so it lives in a module of its own that the mypyc build compiles
(records.py's NamedTuples keep that module in Python)."""

from __future__ import annotations


class InFlight:
    """A request waiting for its response."""

    __slots__ = ("api_key", "client_id", "header_version", "received", "then", "version")

    def __init__(
        self, api_key: int, version: int, header_version: int, client_id: str | None, now: float
    ) -> None:
        self.api_key = api_key
        self.version = version
        self.header_version = header_version  # of the response
        self.client_id = client_id
        self.received = now  # arrived from the client and was forwarded at once
        # What kproxy answered itself to requests the client sent after this one (a
        # refusal, KIP-511's ApiVersions answer): sent right after this one's response,
        # as a broker keeps a connection's responses in order. None: nothing.
        self.then: list[bytes] | None = None
