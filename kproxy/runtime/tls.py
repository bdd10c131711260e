"""TLS contexts from the settings, their reload, and why a handshake failed.

The standard library's `ssl` (OpenSSL) does the TLS; this module only builds its
contexts. Towards clients, every new connection takes `ServerTls.context` at accept time,
so a reload (SIGHUP, or a certificate file that changed) serves new connections with
the new certificate while established ones keep theirs. A reload that cannot load its
files changes nothing: the running certificate stays and the reason is logged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, NamedTuple

if TYPE_CHECKING:
    from kproxy.config.settings import ClusterSettings
    from kproxy.config.tls import ClusterTlsSettings, ListenerTlsSettings, TlsVersion

log = logging.getLogger("kproxy.tls")

__all__ = [
    "ServerTls",
    "TlsReceived",
    "TlsServerLayer",
    "TlsSetupError",
    "client_context",
    "failure_reason",
    "failure_text",
    "server_context",
    "upstream_context",
]

_VERSIONS: Final = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
_VERIFY_MODES: Final = {
    "none": ssl.CERT_NONE,
    "optional": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


class TlsSetupError(Exception):
    """A certificate, key or CA file that cannot be used; the text names the setting."""


def _load_chain(
    ctx: ssl.SSLContext, at: str, certificate: str, key: str, password: str | None
) -> None:
    try:
        ctx.load_cert_chain(certificate, key, password=password)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise TlsSetupError(
            f"{at}: cannot load certificate {certificate} with key {key}: {failure_text(exc)}"
        ) from None


def _load_ca(ctx: ssl.SSLContext, at: str, path: str) -> None:
    try:
        ctx.load_verify_locations(cafile=path)
    except (OSError, ValueError) as exc:
        raise TlsSetupError(f"{at}: cannot load CA file {path}: {failure_text(exc)}") from None


def _minimum(ctx: ssl.SSLContext, version: TlsVersion) -> None:
    ctx.minimum_version = _VERSIONS[version]


# The server name each client sent (SNI), by its TLS object: the one way from OpenSSL's
# callback to the connection it belongs to.
_SERVER_NAMES: weakref.WeakKeyDictionary[ssl.SSLObject, str] = weakref.WeakKeyDictionary()
ServerNameCheck = Callable[[str | None], bool]


def _sni_callback(known: ServerNameCheck) -> Callable[..., int | None]:
    def callback(tls: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> int | None:
        if not known(name):
            # The handshake ends with an unrecognized_name alert (RFC 6066 3).
            return ssl.ALERT_DESCRIPTION_UNRECOGNIZED_NAME
        if name is not None:
            _SERVER_NAMES[tls] = name
        return None

    return callback


def server_context(
    settings: ListenerTlsSettings, server_names: ServerNameCheck | None = None
) -> ssl.SSLContext:
    """The context kproxy's client listeners accept TLS with (`listeners.tls`); with
    `server_names`, a handshake naming a server it does not know is refused."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if server_names is not None:
        ctx.sni_callback = _sni_callback(server_names)
    _minimum(ctx, settings.min_version)
    password = settings.key_password.get_secret_value() if settings.key_password else None
    _load_chain(ctx, "listeners.tls", settings.certificate, settings.key, password)
    if settings.client_ca is not None:
        _load_ca(ctx, "listeners.tls.client_ca", settings.client_ca)
    ctx.verify_mode = _VERIFY_MODES[settings.effective_client_auth]
    return ctx


def client_context(settings: ClusterTlsSettings) -> ssl.SSLContext:
    """The context kproxy dials brokers with (`cluster.tls`): certificates verified
    against the CA (the system's by default); names checked unless turned off."""
    ctx = ssl.create_default_context()
    if settings.ca is not None:
        # Only the configured CAs: a private cluster's CA, not the public web's.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        _load_ca(ctx, "cluster.tls.ca", settings.ca)
    _minimum(ctx, settings.min_version)
    ctx.check_hostname = settings.verify_hostname
    ctx.verify_mode = ssl.CERT_REQUIRED
    if settings.certificate is not None and settings.key is not None:
        password = settings.key_password.get_secret_value() if settings.key_password else None
        _load_chain(ctx, "cluster.tls", settings.certificate, settings.key, password)
    return ctx


def upstream_context(cluster: ClusterSettings) -> ssl.SSLContext | None:
    """A cluster's `tls` as a context (at start, on every reload that brings it, and for
    a switchover's target), with the warning an unchecked broker name deserves each time."""
    tls = cluster.tls
    if tls is None:
        return None
    if not tls.verify_hostname:
        log.warning(
            "cluster.tls.verify_hostname is false: kproxy does not check that a broker's "
            "certificate names that broker; anyone with a certificate from the trusted CAs "
            "can stand in for any broker"
        )
    return client_context(tls)


def _stamp(paths: tuple[str, ...]) -> tuple[tuple[int, int, int], ...]:
    """What tells a changed file from the one loaded: inode (a renamed-in replacement, as
    Kubernetes updates a mounted Secret), size and modification time."""
    stamps = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            stamps.append((0, 0, 0))
            continue
        stamps.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(stamps)


class ServerTls:
    """The listeners' TLS: the current context, and its reload from disk."""

    def __init__(
        self, settings: ListenerTlsSettings, server_names: ServerNameCheck | None = None
    ) -> None:
        self._server_names = server_names
        self.replace(settings)

    def replace(self, settings: ListenerTlsSettings) -> None:
        """Load `settings`' files now for new connections (at start, on a configuration
        reload); on TlsSetupError nothing changes."""
        stamp = _stamp(settings.files())  # before reading: a later change shows again
        self.context = server_context(settings, self._server_names)
        self.settings, self._loaded = settings, stamp

    def changed_on_disk(self) -> bool:
        return _stamp(self.settings.files()) != self._loaded

    def mark_seen(self) -> None:
        """Take the files as they are now as seen (one that failed to load is tried again
        only once it changes again)."""
        self._loaded = _stamp(self.settings.files())

    def reload(self) -> None:
        """Load the same files again (they changed on disk)."""
        self.replace(self.settings)


class TlsReceived(NamedTuple):
    """What a client's bytes came to: plaintext for the session, bytes for the client
    (handshake messages, an alert), and the failure that ends the connection, if any."""

    plaintext: bytes
    to_peer: bytes
    failure: ssl.SSLError | None
    closed: bool  # the client said close_notify


class TlsServerLayer:
    """TLS termination for one client connection, sans-IO: OpenSSL (`ssl.SSLObject`) over
    memory buffers. The connection feeds what it reads and writes what comes out, so it
    knows when and why a handshake failed (a transport's own TLS would only drop the
    connection) and no byte is read before the handshake can see it."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self.established = False

    def receive(self, data: bytes) -> TlsReceived:
        self._incoming.write(data)
        if not self.established:
            try:
                self._tls.do_handshake()
            except ssl.SSLWantReadError:
                return TlsReceived(b"", self._outgoing.read(), None, False)
            except ssl.SSLError as exc:  # the alert OpenSSL wrote goes to the client
                return TlsReceived(b"", self._outgoing.read(), exc, False)
            self.established = True
        incoming, tls = self._incoming, self._tls
        pieces: list[bytes] = []
        closed = False
        try:
            # Read only while OpenSSL holds bytes, as many as it holds: plaintext is never
            # longer than its record, so a small request allocates no 256 KiB. A read that
            # finds nothing raises SSLWantReadError, which costs more than decrypting a
            # small record (python/cpython#123954); with these checks it happens only
            # when the bytes end inside a record.
            while held := incoming.pending + tls.pending():
                piece = tls.read(min(held, _READ_BYTES))
                if not piece:  # close_notify
                    closed = True
                    break
                pieces.append(piece)
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:
            closed = True
        except ssl.SSLError as exc:
            return TlsReceived(b"".join(pieces), self._outgoing.read(), exc, False)
        plaintext = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        outgoing = self._outgoing
        return TlsReceived(plaintext, outgoing.read() if outgoing.pending else b"", None, closed)

    def peer_subject(self) -> str | None:
        """The client certificate's subject as RFC 2253 writes it (as Java's X500Principal
        does, whose text Kafka's principal mapping rules match), once the handshake is
        done; None when the client sent no certificate."""
        der = self._tls.getpeercert(binary_form=True)
        if not der:
            return None
        from cryptography import x509  # only for a client that sent a certificate

        return x509.load_der_x509_certificate(der).subject.rfc4514_string()

    @property
    def server_name(self) -> str | None:
        """The name the client asked for (SNI), once the handshake has read it."""
        return _SERVER_NAMES.get(self._tls)

    def send(self, chunks: list[bytes | memoryview]) -> bytes:
        """Encrypt what goes to the client: one write, so that small responses share TLS
        records instead of taking one each."""
        self._tls.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))
        return self._outgoing.read()

    def close(self) -> bytes:
        """The close_notify alert to send before closing (RFC 8446 6.1): the client
        then knows the end was meant, not a cut connection."""
        if not self.established:
            return b""
        # SSLWantReadError: the peer's own close_notify is not awaited.
        with contextlib.suppress(ssl.SSLError):
            self._tls.unwrap()
        return self._outgoing.read()


_READ_BYTES: Final = 1 << 18

# OpenSSL's reasons (ssl.SSLError.reason) and certificate verification codes (X509_V_ERR_*)
# grouped into the bounded labels of kproxy_tls_handshake_failures_total: kproxy's own
# verification of the peer's certificate (no_certificate, untrusted_certificate,
# certificate_expired, hostname_mismatch...) apart from the peer refusing kproxy's.
_REASONS: Final = {
    "WRONG_VERSION_NUMBER": "not_tls",
    "HTTP_REQUEST": "not_tls",
    "HTTPS_PROXY_REQUEST": "not_tls",
    "UNKNOWN_PROTOCOL": "not_tls",
    "RECORD_LAYER_FAILURE": "not_tls",
    "PACKET_LENGTH_TOO_LONG": "not_tls",
    "PEER_DID_NOT_RETURN_A_CERTIFICATE": "no_certificate",
    # Alerts: the other side refused kproxy's certificate (or its lack of one).
    "TLSV13_ALERT_CERTIFICATE_REQUIRED": "refused_by_peer",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED": "refused_by_peer",
    "TLSV1_ALERT_UNKNOWN_CA": "refused_by_peer",
    "SSLV3_ALERT_BAD_CERTIFICATE": "refused_by_peer",
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN": "refused_by_peer",
    "TLSV1_ALERT_DECRYPT_ERROR": "refused_by_peer",
    "UNSUPPORTED_PROTOCOL": "protocol_version",
    "TLSV1_ALERT_PROTOCOL_VERSION": "protocol_version",
    "NO_PROTOCOLS_AVAILABLE": "protocol_version",
    "NO_SHARED_CIPHER": "protocol_version",
    "SSLV3_ALERT_HANDSHAKE_FAILURE": "protocol_version",
    "UNEXPECTED_EOF_WHILE_READING": "closed",
    # The only callback kproxy sets is the server name check (SNI routing).
    "CALLBACK_FAILED": "unknown_server_name",
}
_VERIFY_CODES: Final = {
    10: "certificate_expired",  # X509_V_ERR_CERT_HAS_EXPIRED
    9: "certificate_not_yet_valid",  # X509_V_ERR_CERT_NOT_YET_VALID
    62: "hostname_mismatch",  # X509_V_ERR_HOSTNAME_MISMATCH
    64: "hostname_mismatch",  # X509_V_ERR_IP_ADDRESS_MISMATCH
}
FAILURE_REASONS: Final = frozenset(
    (*_REASONS.values(), *_VERIFY_CODES.values(), "untrusted_certificate", "timeout", "other")
)


def failure_reason(exc: BaseException) -> str:
    """The bounded label of a failed handshake."""
    if isinstance(exc, TimeoutError) or "taking longer" in str(exc):
        return "timeout"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return _VERIFY_CODES.get(exc.verify_code, "untrusted_certificate")
    if isinstance(exc, ssl.SSLError):
        return _REASONS.get(getattr(exc, "reason", None) or "", "other")
    if isinstance(exc, ConnectionError | EOFError):
        return "closed"
    return "other"


def failure_text(exc: BaseException) -> str:
    """What a log line says of a failed handshake or a TLS file that would not load."""
    if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_message:
        return f"certificate verify failed: {exc.verify_message}"
    reason = getattr(exc, "reason", None)
    if isinstance(exc, ssl.SSLError) and reason:
        return str(reason).lower().replace("_", " ")
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
