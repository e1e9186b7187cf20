#!/usr/bin/env bash
# Static checks: formatting, vet, and that go.mod requires every staging
# module at the release kubeversion.Pinned names.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh

unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [[ -n "${unformatted}" ]]; then
  echo "not gofmt-ed:" >&2
  echo "${unformatted}" >&2
  exit 1
fi
go vet ./... ./driversdk/...
# The providers' module on its own, without go.work: what links anything
# of the harness or the SDK does not build here (providers/go.mod).
(cd providers && GOWORK=off go vet ./...)
# The providers' module is tidy: what it imports, it requires directly.
(cd providers && GOWORK=off go mod tidy -diff)
# The staging modules at kubeversion.Pinned's release, and no replace
# directive (scripts/update-k8s-deps.sh).
go test ./kubeversion/ -run TestPinnedMatchesGoMod
echo "verify: ok"
