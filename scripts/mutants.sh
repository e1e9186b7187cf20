#!/usr/bin/env bash
# Mutants: the reference provider with one defect at a time (the mutant
# corpus of cmd/ccm-conformance/mutants_test.go), each run as it would be
# published (no label filter) on shared local clusters, its run directory
# published into a store and judged by the LKG rules; then the full suite
# against the null CCM (every controller disabled). Prints the table of
# mutants: the specs that caught each, the first line of the failure, the
# LKG verdict and where the release-blocking failures were asserted
# (docs/mutants.md). Fails if a mutant survives, its verdict is not fail, a
# spec is killed by no mutant, or a spec passes against the null CCM.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh
export CCM_CONFORMANCE_MUTANTS_UNFILTERED=1
exec go test ./cmd/ccm-conformance -run 'TestIntegrationMutants$|TestIntegrationNullCCMPassesNothing$' -count=1 -v -timeout 40m
