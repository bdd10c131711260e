"""The one exception type the protocol core raises for bad input."""

from __future__ import annotations


class ProtocolError(Exception):
    """Bad bytes from a peer. `reason` is a short, bounded label for metrics."""

    reason = "malformed"

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class FrameTooLarge(ProtocolError):
    reason = "frame_too_large"


class NegativeFrameSize(ProtocolError):
    reason = "negative_frame_size"


class NotKafka(ProtocolError):
    """The first bytes of a connection are another protocol (TLS, HTTP)."""

    reason = "not_kafka"


class MalformedMessage(ProtocolError):
    reason = "malformed"


class UnsupportedVersion(ProtocolError):
    reason = "unsupported_version"
