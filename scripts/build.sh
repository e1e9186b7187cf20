#!/usr/bin/env bash
# Build the harness, its kubetest2 tester and the reference provider into bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh

version="$(git describe --tags --always --dirty 2>/dev/null || echo devel)"
ldflags="-X github.com/ccm-conformance/ccm-conformance/cmd/ccm-conformance/app.Version=${version}"
ldflags+=" -X github.com/ccm-conformance/ccm-conformance/cmd/kubetest2-tester-ccm/app.Version=${version}"
mkdir -p bin
for target in \
  ./cmd/ccm-conformance \
  ./cmd/kubetest2-tester-ccm \
  ./providers/reference/cmd/reference-ccm \
  ./providers/reference/cmd/reference-cloud \
  ./providers/reference/cmd/reference-cloud-driver; do
  name="$(basename "${target}")"
  echo "building bin/${name}" >&2
  go build -ldflags "${ldflags}" -o "bin/${name}" "${target}"
done
