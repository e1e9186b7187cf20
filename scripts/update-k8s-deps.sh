#!/usr/bin/env bash
# Pin this module and the providers' module to one Kubernetes release.
#
# The module links the published staging modules (k8s.io/api, client-go,
# cloud-provider, ...) at v0.N.P for release v1.N.P, and builds the
# Kubernetes binaries in a module of its own making (internal/k8sbin), so
# it needs no k8s.io/kubernetes requirement and no replace directive (a
# module with any cannot be installed with `go install ...@version`). The
# release is written once, kubeversion.Pinned; this script moves it and
# every staging module go.mod requires together, and the kubeversion tests
# fail when the two disagree.
#
# Usage: scripts/update-k8s-deps.sh v1.37.2
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh

version="${1:-}"
if [[ ! "${version}" =~ ^v1\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(alpha|beta|rc)\.(0|[1-9][0-9]*))?$ ]]; then
  echo "usage: $0 v1.MINOR.PATCH[-rc.N] (got '${version}')" >&2
  exit 2
fi
staging_version="v0.${version#v1.}"

# The staging modules go.mod requires today, directly or not: the
# kubeversion package's list of staging modules decides which k8s.io
# modules move with the release (klog, utils and kube-openapi do not).
# staging_modules lists the staging modules among the k8s.io modules of
# the module graph of the current directory; $1 is kubeversion/cases.go.
staging_modules() {
  go list -m -f '{{.Path}}' all | grep '^k8s\.io/' | while read -r mod; do
    if grep -q "\"${mod}\": true" "$1"; then echo "${mod}"; fi
  done
}

mapfile -t staging < <(staging_modules kubeversion/cases.go)
if [[ ${#staging[@]} -eq 0 ]]; then
  echo "error: go.mod requires no staging module; is this the ccm-conformance module?" >&2
  exit 2
fi

echo "moving ${#staging[@]} staging modules to ${staging_version}" >&2
scripts/gomod.sh get "${staging[@]/%/@${staging_version}}"
sed -i "s/^const Pinned = \".*\"/const Pinned = \"${version}\"/" kubeversion/kubeversion.go
scripts/gomod.sh mod tidy

# The providers' module (providers/go.mod) links the same staging modules
# and moves with them; it requires nothing unpublished, so the go command
# runs there as it is.
mapfile -t provider_staging < <(cd providers && GOWORK=off staging_modules ../kubeversion/cases.go)
(cd providers && GOWORK=off GOFLAGS="${GOFLAGS} -mod=mod" go get "${provider_staging[@]/%/@${staging_version}}" && GOWORK=off go mod tidy)
go test ./kubeversion/
echo "pinned Kubernetes ${version}: ${staging[*]} at ${staging_version}; providers/go.mod too" >&2
