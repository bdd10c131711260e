"""Quotas in the running proxy: one book every client connection charges, changed in
place by a reload, established connections included."""

from __future__ import annotations

from typing import Any

from kproxy.config.reload_table import plan
from kproxy.config.settings import Settings, parse_config
from kproxy.protocol.apis import PRODUCE
from kproxy.runtime.proxy import Proxy


def settings(entries: list[dict[str, Any]]) -> Settings:
    return parse_config(
        {
            "cluster": {"bootstrap_servers": ["127.0.0.1:9092"]},
            "admin": {"enabled": False},
            "quotas": {"entries": entries},
        }
    )


def test_a_reload_changes_quotas_at_once() -> None:
    old = settings([{"client_id": "app", "produce_bytes_per_second": 10.0}])
    proxy = Proxy(old)
    book = proxy.quotas
    assert proxy.services.quotas is book and book.active
    bucket = book.bucket("app", "10.0.0.1", 0.0)
    assert bucket is not None and bucket.charge([(PRODUCE, 1000)], 1.0) > 0
    new = settings([{"name": "app", "client_id": "app", "produce_bytes_per_second": 1e9}])
    reload = plan(old, new)
    assert reload.applied == ["quotas.entries"] and not reload.restart
    proxy.apply(reload.effective)
    assert proxy.quotas is book and bucket.retired  # sessions look their rates up again
    fresh = book.bucket("app", "10.0.0.1", 2.0)
    assert fresh is not None and fresh.rule.label == "app"
    assert fresh.charge([(PRODUCE, 1000)], 2.0) == 0
    assert proxy.topology()["throttled"] == []
    proxy.apply(plan(reload.effective, settings([])).effective)
    assert not book.active and "throttled" not in proxy.topology()
