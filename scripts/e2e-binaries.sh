#!/usr/bin/env bash
# The three executables kubetest2's stock ginkgo tester wants side by side
# (docs/kubetest2.md, "With the stock ginkgo tester"): e2e.test (the suites,
# go test -c with the e2etest tag), the ginkgo v2 CLI at the version the
# suites link, and kubectl (which that tester checks for and passes, and
# the suites do not use: any kubectl will do).
#
# Usage: scripts/e2e-binaries.sh [DIR]   (default _output/e2e)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh

out="${1:-_output/e2e}"
mkdir -p "${out}"
echo "e2e-binaries: e2e.test (go test -c -tags e2etest)" >&2
go test -c -tags e2etest -o "${out}/e2e.test" ./cmd/kubetest2-tester-ccm/e2etest
echo "e2e-binaries: ginkgo (github.com/onsi/ginkgo/v2/ginkgo, the go.mod tool)" >&2
go build -o "${out}/ginkgo" github.com/onsi/ginkgo/v2/ginkgo

cache="${CCM_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/ccm-conformance}/bin/kubernetes-$(sed -n 's/^const Pinned = "\(.*\)"/\1/p' kubeversion/kubeversion.go)/kubectl"
if command -v kubectl >/dev/null 2>&1; then
  cp "$(command -v kubectl)" "${out}/kubectl"
elif [[ -x "${cache}" ]]; then
  cp "${cache}" "${out}/kubectl"
else
  echo "e2e-binaries: no kubectl on PATH or in ${cache}; install any kubectl, or build one with 'ccm-conformance kind node-image'" >&2
  exit 2
fi
echo "e2e-binaries: ${out}/{e2e.test,ginkgo,kubectl}" >&2
