#!/usr/bin/env bash
# Unit and integration tests. Integration tests (TestIntegration*) start real
# processes: the local cluster, the reference provider, the harness binary.
#
# The output goes through tools/testreport: each package's ok or FAIL
# line, the whole output of a failed test, a line for each skipped or slow
# top-level test, and at the end the slowest tests and packages and a count.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh

go vet ./... ./driversdk/...
# The providers' module on its own, without go.work: what links anything
# of the harness or the SDK does not build here (providers/go.mod).
(cd providers && GOWORK=off go vet ./...)

report="$(mktemp -d)"
trap 'rm -rf "$report"' EXIT
go build -o "$report/testreport" ./tools/testreport/cmd/testreport

# Packages with integration tests (TestIntegration*) bring up clusters, and
# this machine kind has two cores: they run one at a time, after the others.
# The others only link and run small test binaries: two at a time.
mapfile -t integration < <(grep -rl --include='*_test.go' '^func TestIntegration' . | xargs -n1 dirname | sort -u)
mapfile -t unit < <(go list -f '{{.Dir}}' ./... ./driversdk/... ./providers/... | while read -r dir; do
  for i in "${integration[@]}"; do
    [[ "$dir" == "$PWD/${i#./}" ]] && continue 2
  done
  echo "$dir"
done | sed "s|^$PWD|.|")
{
  rc=0
  go test -json -p 2 -timeout 75m -count=1 "${unit[@]}" "$@" || rc=$?
  go test -json -p 1 -timeout 75m -count=1 "${integration[@]}" "$@" || rc=$?
  exit "$rc"
} 2>&1 | "$report/testreport"
