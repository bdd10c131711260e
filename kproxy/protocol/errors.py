"""The one exception type the protocol core and the session raise for bad input, and
its kinds. Exception classes live here, in a module that stays Python: a subclass built
by mypyc loses its class-level `reason`."""

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


class ApiNotAllowed(UnsupportedVersion):
    """An API a client listener does not serve (the controller plane)."""

    reason = "api_not_allowed"


class ApiDenied(UnsupportedVersion):
    """Refused by the listener's API policy where no response can say so."""

    reason = "api_denied"
