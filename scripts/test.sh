#!/usr/bin/env bash
# Unit and integration tests. Integration tests (TestIntegration*) start real
# processes: the local cluster, the reference provider, the harness binary.
#
# The output goes through internal/testreport: each package's ok or FAIL
# line, the whole output of a failed test, a line for each skipped or slow
# top-level test, and at the end the slowest tests and packages and a count.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh

go vet ./...

report="$(mktemp -d)"
trap 'rm -rf "$report"' EXIT
go build -o "$report/testreport" ./internal/testreport/cmd/testreport

# One package at a time: integration tests bring up clusters, and this
# machine kind has two cores.
go test -json -p 1 -timeout 75m -count=1 ./... "$@" 2>&1 | "$report/testreport"
