#!/usr/bin/env bash
# Pin this module to one Kubernetes release.
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, client-go,
# cloud-provider, ...) at v0.0.0 and replaces them with ./staging paths, which
# only work inside its own repository. A module that depends on
# k8s.io/kubernetes must therefore replace every staging module with its
# published v0.X.Y release. This script reads the staging list from
# k8s.io/kubernetes's own go.mod, so a new staging module is never missed.
#
# Usage: scripts/update-k8s-deps.sh v1.37.2
set -euo pipefail

version="${1:-}"
if [[ ! "${version}" =~ ^v1\.([0-9]+)\.([0-9]+)(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: $0 v1.MINOR.PATCH (got '${version}')" >&2
  exit 2
fi
staging_version="v0.${version#v1.}"

cd "$(dirname "$0")/.."

echo "resolving k8s.io/kubernetes@${version}" >&2
gomod="$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
if [[ -z "${gomod}" || ! -f "${gomod}" ]]; then
  echo "error: could not download the go.mod of k8s.io/kubernetes@${version}" >&2
  exit 2
fi

mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\1#p' "${gomod}" | sort -u)
if [[ ${#staging[@]} -eq 0 ]]; then
  echo "error: no staging replacements found in ${gomod}" >&2
  exit 2
fi

edits=(-require "k8s.io/kubernetes@${version}")
skipped=()
for mod in "${staging[@]}"; do
  # Some staging modules (samples) are not published for every release; a
  # replacement pointing at a missing version would break every build.
  if go mod download "${mod}@${staging_version}" >/dev/null 2>&1; then
    edits+=(-require "${mod}@${staging_version}" -replace "${mod}=${mod}@${staging_version}")
  else
    skipped+=("${mod}")
    go mod edit -dropreplace "${mod}" 2>/dev/null || true
  fi
done

go mod edit "${edits[@]}"
go mod tidy
echo "pinned k8s.io/kubernetes ${version} and ${#staging[@]} staging modules at ${staging_version}" >&2
if [[ ${#skipped[@]} -gt 0 ]]; then
  echo "not published at ${staging_version} (left unreplaced): ${skipped[*]}" >&2
fi
