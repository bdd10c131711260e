"""SIGHUP: the configuration file read again and its live keys applied.

A file that fails validation (or names TLS files that cannot be loaded) changes nothing:
the running configuration stays and the reason is logged. Otherwise the keys
`kproxy.config.reload_table.LIVE` lists take effect, the others are named as waiting for a
restart, and the listeners' certificates are loaded again in any case (SIGHUP is also
how an operator says "the certificate files changed").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kproxy.config.reload_table import LIVE, plan, settings_hash
from kproxy.config.settings import ConfigError, load_config
from kproxy.runtime.tls import TlsSetupError

if TYPE_CHECKING:
    from kproxy.runtime.observer import ProxyObserver
    from kproxy.runtime.proxy import Proxy

log = logging.getLogger("kproxy.reload")


class ConfigReloader:
    """Re-reads `path` into the running proxy (whose `settings` are what it serves now)."""

    def __init__(self, path: str | None, proxy: Proxy, observer: ProxyObserver) -> None:
        self.path = path
        self.proxy = proxy
        self.observer = observer
        observer.config_loaded(settings_hash(proxy.settings), False)

    def reload(self) -> str:
        """Reload now; the result (applied, unchanged, restart_needed, rejected)."""
        if self.path is None:  # no file (the demo): certificates only
            self.proxy.reload_certificates("SIGHUP")
            return "unchanged"
        try:
            change = plan(self.proxy.settings, load_config(self.path))
            self.proxy.apply(change.effective)
        except (ConfigError, TlsSetupError) as exc:
            self.observer.config_reloaded("rejected")
            log.error("configuration %s not reloaded, the running one stays: %s", self.path, exc)
            return "rejected"
        logging.getLogger().setLevel(change.effective.log.level)
        if "listeners.tls" not in change.applied:
            self.proxy.reload_certificates("SIGHUP")
        self.observer.config_reloaded(change.result)
        self.observer.config_loaded(settings_hash(change.effective), bool(change.restart))
        for key in change.applied:
            log.info("reloaded %s (takes effect: %s)", key, LIVE[key])
        if change.restart:
            log.warning(
                "configuration %s changes %s: needs a restart (the running values stay until then)",
                self.path,
                ", ".join(change.restart),
            )
        elif not change.applied:
            log.info("configuration %s reloaded: nothing changed", self.path)
        return change.result
