#!/usr/bin/env bash
# Build the harness, its kubetest2 tester, the reference provider and the
# vSphere provider's simulator and driver into bin/ (the vSphere CCM itself
# is built from its module into the cache: ccm-conformance ccm build).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh

version="$(git describe --tags --always --dirty 2>/dev/null || echo devel)"
ldflags="-X github.com/ccm-conformance/ccm-conformance/internal/harnessversion.Stamped=${version}"
mkdir -p bin
targets=(
  ./cmd/ccm-conformance
  ./cmd/kubetest2-tester-ccm
  ./providers/reference/cmd/reference-ccm
  ./providers/reference/cmd/reference-cloud
  ./providers/reference/cmd/reference-cloud-driver
  ./providers/reference/cmd/reference-node-manager
  ./providers/vsphere/cmd/vsphere-cloud
  ./providers/vsphere/cmd/vsphere-cloud-driver
  ./providers/aws/cmd/aws-cloud
  ./providers/aws/cmd/aws-cloud-driver
)
echo "building bin/: ${targets[*]##*/}" >&2
# One go command links them side by side; each is named after its directory.
go build -ldflags "${ldflags}" -o bin/ "${targets[@]}"
