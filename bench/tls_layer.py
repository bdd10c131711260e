"""kproxy's TLS termination alone, in one process: CPU per record received and sent.

    python -m bench.tls_layer [--baseline REV] [--rounds 11]

`kproxy.runtime.tls.TlsServerLayer` (OpenSSL over memory buffers) after a handshake with an
`ssl.SSLObject` client; the client's records are made before the clock starts, so only
the server side is timed (`time.process_time`). With ``--baseline``, the layer of that
revision's `kproxy/runtime/tls.py` runs in the same process, the two alternating in every round,
and the ratio of this tree's CPU to the baseline's is given per round: no sockets, no
broker, so a change of a few microseconds per record shows, which the TLS benchmark
(`bench.tls_bench`, a real broker and clients sharing two cores) cannot see.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trustme

from bench.peers import REPO
from kproxy.runtime.tls import TlsServerLayer

SIZES = (100, 1024, 65536)
Layer = Callable[[ssl.SSLContext], Any]


def baseline_layer(revision: str, where: Path) -> Layer:
    """`TlsServerLayer` as `kproxy/runtime/tls.py` was at ``revision``."""
    shown = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{revision}:kproxy/runtime/tls.py"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if shown.returncode != 0:
        raise SystemExit(
            f"--baseline {revision}: no kproxy/runtime/tls.py there ({shown.stderr.strip()})"
        )
    path = where / "baseline_tls.py"
    path.write_text(shown.stdout)
    spec = importlib.util.spec_from_file_location("baseline_tls", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    layer: Layer = module.TlsServerLayer
    return layer


class Pair:
    """A server layer and an `ssl.SSLObject` client, handshake done."""

    def __init__(self, layer: Layer, server: ssl.SSLContext, client: ssl.SSLContext) -> None:
        self.server = layer(server)
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.client = client.wrap_bio(self.incoming, self.outgoing, server_hostname="kproxy.test")
        for _ in range(10):
            with contextlib.suppress(ssl.SSLWantReadError):
                self.client.do_handshake()
            received = self.server.receive(self.outgoing.read())
            self.incoming.write(received.to_peer)
            if self.server.established:
                return
        raise RuntimeError("the handshake did not end")

    def records(self, size: int, count: int) -> list[bytes]:
        out = []
        for _ in range(count):
            self.client.write(bytes(size))
            out.append(self.outgoing.read())
        return out


def one_round(layer: Layer, server: ssl.SSLContext, client: ssl.SSLContext) -> dict[str, float]:
    """CPU microseconds per record, received and sent, at every size."""
    pair = Pair(layer, server, client)
    out = {}
    for size in SIZES:
        count = 20_000 if size < 10_000 else 2_000
        records = pair.records(size, count)
        start = time.process_time()
        for record in records:
            received = pair.server.receive(record)
        used = time.process_time() - start
        if len(received.plaintext) != size or received.failure is not None:
            raise RuntimeError(f"the layer read {len(received.plaintext)} of {size} bytes")
        out[f"receive {size} B"] = 1e6 * used / count
        answer: list[bytes | memoryview] = [bytes(4), memoryview(bytes(size))]
        start = time.process_time()
        for _ in range(count):
            pair.server.send(answer)
        out[f"send {size} B"] = 1e6 * (time.process_time() - start) / count
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tls_layer")
    p.add_argument("--baseline", metavar="REV", help="also this revision's kproxy/runtime/tls.py")
    p.add_argument("--rounds", type=int, default=11)
    args = p.parse_args(argv)
    ca = trustme.CA()
    server, client = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), ssl.create_default_context()
    ca.issue_cert("kproxy.test").configure_cert(server)
    ca.configure_trust(client)
    with tempfile.TemporaryDirectory(prefix="kproxy-tls-layer-") as tmp:
        layers: dict[str, Layer] = {"tree": TlsServerLayer}
        if args.baseline:
            layers["baseline"] = baseline_layer(args.baseline, Path(tmp))
        rounds: dict[str, list[dict[str, float]]] = {name: [] for name in layers}
        for r in range(args.rounds):
            order = list(layers) if r % 2 == 0 else list(reversed(layers))
            for name in order:
                rounds[name].append(one_round(layers[name], server, client))
    print(f"CPU us per record, median [min-max] of {args.rounds} rounds")
    for key in rounds["tree"][0]:
        tree = [r[key] for r in rounds["tree"]]
        line = f"{key:<16} tree {statistics.median(tree):7.2f} [{min(tree):.2f}-{max(tree):.2f}]"
        if "baseline" in rounds:
            base = [r[key] for r in rounds["baseline"]]
            ratios = [t / b for t, b in zip(tree, base, strict=True)]
            line += (
                f"  baseline {statistics.median(base):7.2f}"
                f"  tree/baseline {statistics.median(ratios):.2f}"
                f" [{min(ratios):.2f}-{max(ratios):.2f}]"
            )
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
