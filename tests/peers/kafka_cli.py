"""`python -m tests.peers.kafka_cli`: fetch Apache Kafka's jars for kproxy's tests (what
CI does from ``.ci/install-peers.sh``), print where they are, or run a local cluster in
the foreground (``up``) to try kproxy against by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Sequence

from tests.peers.kafka_cluster import KafkaCluster
from tests.peers.kafka_install import KAFKA_VERSION, OTHER_RELEASES, ensure_kafka_jars
from tests.peers.mirror_maker import ensure_mirror_jars


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.peers.kafka_cli",
        description="Fetch Apache Kafka jars for kproxy's tests, or run a local cluster.",
    )
    parser.add_argument(
        "--version",
        help=f"Kafka release (default {KAFKA_VERSION}; fetch: every release the tests run)",
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    fetch = sub.add_parser("fetch", help="download the jars into the cache (idempotent)")
    fetch.add_argument("--force", action="store_true", help="download again")
    sub.add_parser("lib", help="print the jar directory (fetching if needed)")
    up = sub.add_parser("up", help="run a cluster in the foreground until Ctrl-C")
    up.add_argument("--nodes", type=int, default=3)
    args = parser.parse_args(argv)

    if args.cmd == "fetch":
        for version in [args.version] if args.version else [KAFKA_VERSION, *OTHER_RELEASES]:
            started = time.monotonic()
            lib = ensure_kafka_jars(version, force=args.force)
            jars = len(list(lib.glob("*.jar")))
            print(f"Kafka {version}: {jars} jars in {lib} ({time.monotonic() - started:.1f}s)")
        started = time.monotonic()
        lib = ensure_mirror_jars()  # MirrorMaker 2, for the cluster switchover tests
        jars = len(list(lib.glob("*.jar")))
        print(f"MirrorMaker 2: {jars} jars in {lib} ({time.monotonic() - started:.1f}s)")
        return 0
    version = args.version or KAFKA_VERSION
    if args.cmd == "lib":
        print(ensure_kafka_jars(version))
        return 0

    started = time.monotonic()
    with KafkaCluster(args.nodes, version=version, keep_workdir=True) as cluster:
        print(f"Kafka {version} cluster ready in {time.monotonic() - started:.1f}s")
        print(f"workdir:            {cluster.workdir}")
        print(f"internal bootstrap: {cluster.internal_bootstrap}")
        print(f"external bootstrap: {cluster.external_bootstrap}")
        print(f"controllers:        {cluster.controller_bootstrap}")
        print(f"dial_overrides:     {json.dumps(cluster.dial_overrides)}")
        sys.stdout.flush()
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
