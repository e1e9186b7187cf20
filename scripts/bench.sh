#!/usr/bin/env bash
# Benchmarks. The micro benchmarks run as go test runs them; the system
# benchmarks (cmd/ccm-conformance: whole conformance runs, node
# initialization at scale) run once each, since one iteration takes from
# seconds to minutes. docs/performance.md keeps their figures.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh

go test -run '^$' -bench . -benchmem $(go list ./... | grep -v '/cmd/ccm-conformance$')
go test -run '^$' -bench . -benchtime 1x -timeout 60m ./cmd/ccm-conformance/ "$@"
