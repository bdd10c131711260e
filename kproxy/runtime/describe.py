"""Exceptions as log lines read them: never an empty reason."""

from __future__ import annotations


def describe(exc: BaseException) -> str:
    """Its class, and its message when it has one (`TimeoutError`, not ``""``)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
