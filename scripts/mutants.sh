#!/usr/bin/env bash
# Mutants: the reference provider with one defect at a time (the mutant
# corpus of cmd/ccm-conformance/mutants_test.go), each run with its label
# filter on one shared local cluster, then the full suite against the null
# CCM (every controller disabled). Prints the table of mutants, the specs
# that caught each and the first line of the failure (docs/mutants.md).
# Fails if a mutant survives, a spec is killed by no mutant, or a spec
# passes against the null CCM.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh
exec go test ./cmd/ccm-conformance -run 'TestIntegrationMutants$|TestIntegrationNullCCMPassesNothing$' -count=1 -v -timeout 40m
