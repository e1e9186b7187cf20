#!/usr/bin/env bash
# Unit and integration tests. Integration tests (TestIntegration*) start real
# processes: the local cluster, the reference provider, the harness binary.
set -euo pipefail
cd "$(dirname "$0")/.."

go vet ./...
# One package at a time: integration tests bring up clusters, and this
# machine kind has two cores.
go test -p 1 -timeout 75m -count=1 ./... "$@"
