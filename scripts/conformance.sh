#!/usr/bin/env bash
# The full conformance run: the reference provider on the embedded local
# cluster. The first run builds etcd, kube-apiserver and
# kube-controller-manager from the Go module proxy (about 15 minutes on two
# cores) and caches them; later runs take about a minute. PROFILE picks
# another profile (make conformance-image: the reference CCM as an image);
# BACKEND another backend (make conformance-kind: kind, docs/kind.md).
set -euo pipefail
cd "$(dirname "$0")/.."

args=(run --provider "${PROFILE:-providers/profiles/reference.yaml}" --artifacts "${ARTIFACTS:-_artifacts}")
if [[ -n "${BACKEND:-}" ]]; then
  args+=(--backend "${BACKEND}")
fi
if [[ -n "${LABEL_FILTER:-}" ]]; then
  args+=(--label-filter "${LABEL_FILTER}")
fi
# exec, so that SIGINT and SIGTERM reach the harness directly.
exec bin/ccm-conformance "${args[@]}"
