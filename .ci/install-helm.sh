#!/usr/bin/env bash
# Builds the helm binary the chart tests use (tests/deploy/test_helm.py) from the Go module
# proxy, once, into ${KPROXY_TOOLS_CACHE:-~/.cache/kproxy-tools}/bin. The first build
# takes about 2.5 minutes on 2 cores (downloads included); later runs only check.
set -euo pipefail
HELM_VERSION=v4.3.1
bin="${KPROXY_TOOLS_CACHE:-$HOME/.cache/kproxy-tools}/bin"
stamp="$bin/helm.version"
if [[ -x "$bin/helm" && "$(cat "$stamp" 2>/dev/null)" == "$HELM_VERSION" ]]; then
    echo "install-helm: helm $HELM_VERSION present ($bin/helm)"
    exit 0
fi
if ! command -v go >/dev/null; then
    echo "install-helm: 'go' not found (Go 1.24+ builds helm)" >&2
    exit 1
fi
mkdir -p "$bin"
echo "install-helm: go install helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
GOBIN="$bin" GOFLAGS=-mod=mod go install "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
echo "$HELM_VERSION" > "$stamp"
