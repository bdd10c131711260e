#!/usr/bin/env bash
# Installs everything kproxy's tests need on a fresh machine: the package with its
# test, demo and analytics extras, Debian packages (kcat, haproxy, prometheus,
# chromium) and the Apache Kafka jars from Maven Central. Idempotent: a second run
# only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e '.[test,demo,analytics]'
bash .ci/install-peers.sh
