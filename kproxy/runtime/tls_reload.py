"""Reloading the listeners' certificates: on SIGHUP, and when their files change.

Certificates are short-lived where they are managed (cert-manager renews a Kubernetes
Secret, which the kubelet swaps in place): kproxy picks the new files up without a
restart and without touching an established connection, which keeps the certificate it
was accepted with.
"""

from __future__ import annotations

import asyncio
import logging

from kproxy.runtime.observer import ProxyObserver
from kproxy.runtime.tls import ServerTls, TlsSetupError

log = logging.getLogger("kproxy.tls")
# With file checks off, how often to look whether a reload turned them on.
_IDLE_SECONDS = 5.0


class CertificateReloader:
    """Loads `listeners.tls` again when asked or when a file changed."""

    def __init__(self, tls: ServerTls, observer: ProxyObserver) -> None:
        self.tls = tls
        self.observer = observer
        self.running = True

    def reload(self, trigger: str) -> bool:
        """Load the files now (`trigger` says why, for the log); False, with the running
        certificate kept, when they cannot be loaded."""
        try:
            self.tls.reload()
        except TlsSetupError as exc:
            self.observer.tls_reloaded("failure")
            log.error("TLS certificates not reloaded (%s), the running ones stay: %s", trigger, exc)
            return False
        self.observer.tls_reloaded("success")
        log.info("TLS certificates reloaded (%s): new connections use them", trigger)
        return True

    async def watch(self) -> None:
        """Check the files every `reload_check_seconds` (0: never, SIGHUP only), as the
        running settings say (a reload may change it). A file that failed to load is
        retried only once it changes again."""
        while self.running:
            interval = self.tls.settings.reload_check_seconds
            await asyncio.sleep(interval or _IDLE_SECONDS)
            if not interval:
                continue
            if self.tls.changed_on_disk() and not self.reload("a certificate file changed"):
                self.tls.mark_seen()
