"""Client quotas in the running proxy: the shared book built from `quotas` (and rebuilt
in place by a reload), and a throttled client's connection left unread for its throttle
(KIP-219: a client that ignores `throttle_time_ms` gains nothing)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kproxy.config.quotas import QuotaSettings
from kproxy.session.quota import QuotaBook, QuotaRule


def quota_rules(settings: QuotaSettings) -> list[QuotaRule]:
    return [
        QuotaRule(
            entry.label,
            entry.client_id,
            entry.client_address,
            (
                entry.produce_bytes_per_second,
                entry.fetch_bytes_per_second,
                entry.requests_per_second,
            ),
        )
        for entry in settings.entries
    ]


def quota_book(settings: QuotaSettings) -> QuotaBook:
    """The book every connection charges (inactive, and never consulted, without entries)."""
    return QuotaBook(quota_rules(settings), settings.window_seconds, settings.samples)


def configure(book: QuotaBook, settings: QuotaSettings) -> None:
    book.configure(quota_rules(settings), settings.window_seconds, settings.samples)


def throttle(
    pause: Callable[[str], None],
    resume: Callable[[str], None],
    handle: asyncio.TimerHandle | None,
    seconds: float,
) -> asyncio.TimerHandle:
    """Stop reading a connection for `seconds` from now (a later throttle replaces an
    earlier one): the handle that reads it again."""
    if handle is not None:
        handle.cancel()
    pause("throttled")
    return asyncio.get_running_loop().call_later(seconds, resume, "throttled")
