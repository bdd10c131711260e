"""kproxy's served certificate renewed in place (as a mounted Secret is), without
dropping a connection; files that cannot be loaded leave the running certificate.
"""

from __future__ import annotations

import shutil
import signal
import uuid
from pathlib import Path

import pytest

from tests.integration.tls.proxies import (
    cluster_tls,
    handshake_failures,
    listener_tls,
    metadata_answered,
    tls_client,
)
from tests.kproxy_process import KproxyProcess
from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.net import wait_until
from tests.tls_material import PemPair, TlsMaterial

pytestmark = [pytest.mark.peers, pytest.mark.slow]


def served_serial(port: int, certs: TlsMaterial, pair: PemPair) -> int:
    with tls_client(port, certs, pair) as sock:
        der = sock.getpeercert(binary_form=True)
    assert der is not None
    from cryptography import x509

    return x509.load_der_x509_certificate(der).serial_number


def test_certificates_reload_without_dropping_connections(
    kafka: KafkaCluster, certs: TlsMaterial, tmp_path: Path
) -> None:
    """A renewed certificate (the files replaced, as a mounted Secret is) serves new
    connections at once; an established connection keeps working; files that cannot be
    loaded leave the running certificate in place (SIGHUP and the file check alike)."""
    first = certs.proxy("reload-1")
    live = PemPair(tmp_path / "live.pem", tmp_path / "live-key.pem")
    shutil.copy(first.certificate, live.certificate)
    shutil.copy(first.key, live.key)
    client = certs.client("reloader")
    with KproxyProcess(
        tmp_path,
        kafka.external_bootstrap.split(","),
        cluster={"dial_overrides": kafka.dial_overrides, "tls": cluster_tls(certs)},
        listeners={"tls": listener_tls(live, certs, reload_check_seconds=0.2)},
    ) as proxy:
        port = proxy.bootstrap_port
        first_serial = served_serial(port, certs, client)
        with tls_client(port, certs, client) as established:
            assert metadata_answered(established)
            second = certs.proxy("reload-2")
            for src, dst in ((second.key, live.key), (second.certificate, live.certificate)):
                staged = dst.with_suffix(f".{uuid.uuid4().hex}")
                shutil.copy(src, staged)
                staged.replace(dst)  # renamed in: a new inode, as the kubelet swaps files
            wait_until(
                lambda: served_serial(port, certs, client) != first_serial,
                15,
                what="the renewed certificate served",
            )
            second_serial = served_serial(port, certs, client)
            assert metadata_answered(established)

            live.certificate.write_text("not a certificate\n")
            proxy.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
            wait_until(
                lambda: proxy.metric("kproxy_tls_reloads_total", result="failure") >= 1,
                15,
                what="the failed reload counted",
            )
            assert "the running ones stay" in proxy.log()
            assert served_serial(port, certs, client) == second_serial
            assert metadata_answered(established)
        assert proxy.metric("kproxy_tls_reloads_total", result="success") >= 1
        assert handshake_failures(proxy, "client", "other") == 0
