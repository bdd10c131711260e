"""kproxy's own SASL client, sans-IO: what to send after SaslHandshake, round by round.

PLAIN (RFC 4616) and OAUTHBEARER (RFC 7628, as Kafka frames it in KIP-255) are one
message each; SCRAM-SHA-256/512 (RFC 5802, KIP-84) is two rounds, computed by the
`scramp` library (salted password, proofs, the server's signature check).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import scramp

if TYPE_CHECKING:
    from kproxy.config.sasl import ClusterSaslSettings

__all__ = ["SaslFailed", "SaslSession"]


class SaslFailed(Exception):
    """Authentication did not succeed; the text says why (never the secret)."""


class SaslSession:
    """One authentication: `first()` is the first client message, `next(answer)` the
    one after each answer from the broker (None once the client has nothing more)."""

    def __init__(self, settings: ClusterSaslSettings) -> None:
        self.mechanism = settings.mechanism
        self._settings = settings
        self._scram: scramp.ScramClient | None = None
        self._round = 0

    def first(self) -> bytes:
        s = self._settings
        if self.mechanism == "OAUTHBEARER":
            # GS2 header "n,," then key/value pairs separated by \x01 (RFC 7628 3.1).
            return f"n,,\x01auth=Bearer {self._token()}\x01\x01".encode()
        assert s.username is not None and s.password is not None
        password = s.password.get_secret_value()
        if self.mechanism == "PLAIN":
            return f"\x00{s.username}\x00{password}".encode()
        self._scram = scramp.ScramClient([self.mechanism], s.username, password)
        first: str = self._scram.get_client_first()
        return first.encode()

    def _token(self) -> str:
        s = self._settings
        if s.token is not None:
            return s.token.get_secret_value()
        assert s.token_file is not None
        try:
            return Path(s.token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SaslFailed(f"OAUTHBEARER: cannot read {s.token_file}: {exc}") from None

    def next(self, answer: bytes) -> bytes | None:
        """The client's next message after the broker's `answer` (a successful
        SaslAuthenticate); None when the exchange is complete."""
        if self._scram is None:
            return None
        self._round += 1
        try:
            if self._round == 1:
                self._scram.set_server_first(answer.decode())
                final: str = self._scram.get_client_final()
                return final.encode()
            self._scram.set_server_final(answer.decode())
        except (scramp.ScramException, UnicodeDecodeError) as exc:
            raise SaslFailed(f"{self.mechanism}: {exc}") from None
        return None
