"""Certificates made at test time (trustme): a cluster CA, kproxy's own CA, a stranger's CA,
and the leaf certificates of brokers, kproxy and clients, written as PEM files.

Apache Kafka reads its keystore and truststore as PEM values (`ssl.keystore.type=PEM`,
KIP-651), so no keytool or JKS file is needed.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

import trustme
from cryptography.hazmat.primitives import serialization


@dataclass(frozen=True)
class PemPair:
    """A certificate (with its chain) and its key, as files."""

    certificate: Path
    key: Path

    def kafka_keystore(self, prefix: str) -> dict[str, str]:
        """Broker or Java client settings that present this certificate."""
        return {
            f"{prefix}ssl.keystore.type": "PEM",
            f"{prefix}ssl.keystore.certificate.chain": _one_line(self.certificate),
            f"{prefix}ssl.keystore.key": _one_line(self.key),
        }


def _one_line(path: Path) -> str:
    # A properties value on one line: Java's Properties reads \n back as a newline.
    return path.read_text().strip().replace("\n", "\\n")


def kafka_truststore(ca_file: Path, prefix: str = "") -> dict[str, str]:
    return {
        f"{prefix}ssl.truststore.type": "PEM",
        f"{prefix}ssl.truststore.certificates": _one_line(ca_file),
    }


class TlsMaterial:
    """Every certificate the TLS tests use, under one directory."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.cluster_ca = trustme.CA()  # signs the brokers' and kproxy's upstream certificates
        self.proxy_ca = trustme.CA()  # signs kproxy's listener certificate and the clients'
        self.stranger_ca = trustme.CA()  # trusted by nobody
        self.cluster_ca_file = self._ca(self.cluster_ca, "cluster-ca.pem")
        self.proxy_ca_file = self._ca(self.proxy_ca, "proxy-ca.pem")
        self.stranger_ca_file = self._ca(self.stranger_ca, "stranger-ca.pem")

    def _ca(self, ca: trustme.CA, name: str) -> Path:
        path = self.dir / name
        ca.cert_pem.write_to_path(str(path))
        return path

    def issue(self, ca: trustme.CA, name: str, *identities: str, **kw: object) -> PemPair:
        leaf = ca.issue_cert(*identities, **kw)  # type: ignore[arg-type]
        cert, key = self.dir / f"{name}.pem", self.dir / f"{name}-key.pem"
        cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        # PKCS#8 ("BEGIN PRIVATE KEY"): the form Java's PEM keystore reads.
        private = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
        key.write_bytes(
            private.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return PemPair(cert, key)

    def brokers(self, domain: str) -> PemPair:
        """One certificate for every broker of the cluster (a wildcard of its domain)."""
        return self.issue(self.cluster_ca, "brokers", f"*.{domain}")

    def proxy(self, name: str = "proxy", *hosts: str) -> PemPair:
        """kproxy's listener certificate, for 127.0.0.1 and localhost by default."""
        return self.issue(self.proxy_ca, name, *(hosts or ("127.0.0.1", "localhost")))

    def client(
        self, name: str = "client", ca: trustme.CA | None = None, *, expired: bool = False
    ) -> PemPair:
        """A client certificate (kproxy's CA by default); `expired` ended yesterday."""
        validity: dict[str, datetime.datetime] = {}
        if expired:
            now = datetime.datetime.now(datetime.UTC)
            validity = {
                "not_before": now - datetime.timedelta(days=10),
                "not_after": now - datetime.timedelta(days=1),
            }
        return self.issue(ca or self.proxy_ca, name, f"{name}.clients.invalid", **validity)
