#!/usr/bin/env bash
# Runs a go command that edits the main module's requirements (`go mod
# tidy`, `go get`): scripts/gomod.sh mod tidy, scripts/gomod.sh get x@v.
#
# go.mod requires the cloud-driver SDK (./driversdk, a module of its own) at
# a version that is published only with a release; go.work points the
# go commands that build and test at the checkout's copy, but `go mod tidy`
# and `go get` resolve the whole module graph and read no go.work's
# replace. So this serves the checkout's SDK at that version from a
# temporary module proxy, runs the command, and leaves the SDK's checksum
# out of go.sum: it would be the checksum of this working copy, not of
# anything published (docs/releasing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/goenv.sh

sdk=github.com/ccm-conformance/ccm-conformance/driversdk
version="$(sed -n "s#^[[:space:]]*${sdk} \(v[^[:space:]]*\).*#\1#p" go.mod)"
if [[ -z "${version}" ]]; then
  echo "gomod: go.mod does not require ${sdk}" >&2
  exit 2
fi
proxy="$(mktemp -d)"
# The go command keeps what it downloads; a stale copy of the SDK at that
# version would serve later builds that read no go.work.
forget() {
  local cache
  cache="$(go env GOMODCACHE)"
  chmod -R u+w "${cache}/${sdk}@${version}" 2>/dev/null || true
  rm -rf "${proxy}" "${cache}/${sdk}@${version}" "${cache}/cache/download/${sdk}/@v/${version}".* "${cache}/cache/download/${sdk}/@v/list"
}
trap forget EXIT
go run ./tools/release/cmd/module-proxy --out "${proxy}" --module "${sdk}" --version "${version}" --dir driversdk
GOWORK=off GOFLAGS="${GOFLAGS} -mod=mod" GONOSUMDB="${sdk}" GOPROXY="file://${proxy},$(go env GOPROXY)" go "$@"
sed -i "\#^${sdk} #d" go.sum
