#!/usr/bin/env bash
# Installs everything kproxy's tests need on a fresh machine: the package with its
# test, demo, kafka and analytics extras, Debian packages (kcat, haproxy, prometheus,
# chromium), the Apache Kafka jars and Spark's Kafka connector from Maven Central, and
# helm (built from the Go module proxy) for the chart's tests.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e '.[test,demo,kafka,analytics]'
bash .ci/install-peers.sh
bash .ci/install-helm.sh
# Spark's Kafka connector (kproxy analyze kafka://...): fetched once by Spark's Ivy.
python3 -m kproxy.analytics.kafka_input fetch
